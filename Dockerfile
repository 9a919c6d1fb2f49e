# One image for every role: `docker run <image> api|runner|standalone|admin ...` (deploy/entrypoint.sh).
# Node 24, an LTS line (CI runs the real-mode test suite on the same major: README "Node versions"),
# Debian slim: glibc for the prebuilt native modules (@node-rs/argon2, msgpackr-extract); the lock
# file lists every platform's optional packages.
# The image runs the compiled build (`npm run build`, scripts/build.ts: one bundle per service, source
# maps beside them), the same files the test suite starts: no TypeScript sources, no tsx, no dev
# dependencies at run time.

# 1. build: every dependency (esbuild, tsx), the sources, `npm run build` into dist/
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
# our patches of dependencies, applied by `npm install` (postinstall: patch-package; patches/README.md)
COPY patches ./patches
COPY packages ./packages
COPY services ./services
COPY scripts ./scripts
RUN npm install --no-audit --no-fund \
  && npm run build \
  && mkdir -p /manifests \
  && for f in package.json package-lock.json patches/*.patch packages/*/package.json services/*/package.json; do \
       mkdir -p "/manifests/$(dirname "$f")" && cp "$f" "/manifests/$f"; \
     done

# 2. install: the production dependencies from the lock file (no dev tools: no esbuild, tsx, vitest,
# tsc), for the packages the bundles leave outside (native modules, the embedded database, Baileys)
FROM node:24-bookworm-slim AS install
WORKDIR /app
COPY --from=build /manifests/ ./
RUN npm install --omit=dev --no-audit --no-fund \
  && npm cache clean --force \
  && rm -rf node_modules/@switchboard

# 3. the runtime: the bundles and the dependencies, owned by root, run as the unprivileged `node` user
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HTTP_PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=install /app/node_modules /app/node_modules
COPY --from=build /app/dist /app/dist
COPY deploy/entrypoint.sh deploy/healthcheck.mjs /app/deploy/
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000 34431
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/app/deploy/healthcheck.mjs"]
# the services drain on SIGTERM (README "Operating Switchboard")
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["standalone"]
