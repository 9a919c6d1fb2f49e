# One image for every role: `docker run <image> api|runner|standalone|admin ...` (deploy/entrypoint.sh).
# Node 24, an LTS line (CI runs the real-mode test suite on the same major: README "Node versions"),
# Debian slim: glibc for the prebuilt native modules (@node-rs/argon2, msgpackr-extract); the lock
# file lists every platform's optional packages.

# 1. install the production dependencies from the lock file (no dev tools: no vitest, no tsc)
FROM node:24-bookworm-slim AS install
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages ./packages
COPY services ./services
RUN npm install --omit=dev --no-audit --no-fund \
  && npm cache clean --force \
  && rm -rf packages/*/test services/*/test

# 2. the runtime: the app and its dependencies, owned by root, run as the unprivileged `node` user
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HTTP_PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=install /app /app
COPY deploy/entrypoint.sh deploy/healthcheck.mjs /app/deploy/
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000 34431
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/app/deploy/healthcheck.mjs"]
# the services drain on SIGTERM (README "Operating Switchboard")
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["standalone"]
