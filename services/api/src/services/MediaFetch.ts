/**
 * A send's file given by URL (`{"image": {"url": "https://..."}}`, docs/API.md "Media"): fetched ONCE,
 * when the send is accepted, into a new media, through the same egress policy as webhooks
 * (`UrlPolicy`: http(s) only, no credentials, ports 80/443, every address the host resolves to
 * public unless `WEBHOOK_ALLOW_PRIVATE_TARGETS`; the connection pinned to the checked address, so
 * a second DNS answer cannot redirect it; redirects not followed). The body streams into the store
 * under the kind's limit and its type is checked from its bytes, like an upload; the whole fetch
 * is bounded by `URL_FETCH_TIMEOUT_MS`.
 *
 * Accept time rather than the runner: the client learns at once (422) that a URL is refused,
 * unreachable or not a file the kind takes, instead of a message failing later; the message then
 * carries an ordinary stored media, dispatched like an uploaded one, and the channel's send slot
 * is never held while bytes move (docs/API.md "Media").
 */
import { MediaRepo } from "@switchboard/db"
import { Characters, Errors, type Media, MediaType, type MessageContent } from "@switchboard/domain"
import { SafeEgress, UrlPolicy, WebhooksConfig } from "@switchboard/webhooks"
import { Effect, Option, Stream } from "effect"
import { request } from "undici"
import { REFUSAL_WORDS } from "../EgressRefusals.js"
import { MediaFiles } from "./MediaFiles.js"

/** The whole fetch (connect, headers, body) ends within this. */
export const URL_FETCH_TIMEOUT_MS = 30_000

const refusedUrl = (
  kind: MessageContent.MediaKind,
  reason: string,
  message: string,
  extra: Record<string, unknown> = {}
) =>
  new Errors.ValidationError({
    message,
    details: { reason, ...extra, issues: [{ path: [kind, "url"], message }] }
  })

/**
 * The last path segment, decoded, as a document's file name: its first 255 characters (code
 * points, so an emoji is never cut in half), none when it cannot be decoded or holds U+0000
 * (`%00`, which Postgres cannot store).
 */
export const nameOf = (url: URL): string | undefined => {
  const last = url.pathname.split("/").pop()
  if (last === undefined || last === "") return undefined
  let decoded: string
  try {
    decoded = decodeURIComponent(last)
  } catch {
    return undefined
  }
  if (decoded.includes("\u0000")) return undefined
  return Characters.hasAtMostCharacters(decoded, 255) ? decoded : Array.from(decoded).slice(0, 255).join("")
}

export class MediaFetch extends Effect.Service<MediaFetch>()("@switchboard/service-api/MediaFetch", {
  effect: Effect.gen(function*() {
    const config = yield* WebhooksConfig.WebhooksConfig
    const files = yield* MediaFiles
    const repo = yield* MediaRepo.MediaRepo

    const fetch = Effect.fn("MediaFetch.fetch")(
      function*(workspaceId: string, kind: MessageContent.MediaKind, raw: string) {
        const target = yield* Effect.promise(() =>
          UrlPolicy.resolveTarget(raw, config.allowPrivateTargets, config.resolver, 5_000)
        )
        if (typeof target === "string") {
          return yield* refusedUrl(
            kind,
            "url_refused",
            `The URL is not allowed: ${
              REFUSAL_WORDS[target]
            }. Send a public URL or upload the file first (docs/API.md "Media")`,
            {
              refusal: target
            }
          )
        }
        const agent = SafeEgress.pinnedAgent(target)
        // cleared once the fetch ends: a timer firing later would abort a finished request
        const controller = new AbortController()
        const timer = setTimeout(() => controller.abort(), URL_FETCH_TIMEOUT_MS)
        const signal = controller.signal
        return yield* Effect.acquireUseRelease(
          Effect.tryPromise({
            try: () =>
              request(target.url, {
                method: "GET",
                dispatcher: agent,
                headers: { "user-agent": "Switchboard-Media/1.0", accept: "*/*" },
                signal
              }),
            catch: () => refusedUrl(kind, "url_unreachable", "The URL could not be fetched")
          }),
          (response) =>
            Effect.gen(function*() {
              if (response.statusCode !== 200) {
                return yield* refusedUrl(kind, "url_unreachable", `The URL answered ${response.statusCode}, not 200`, {
                  status: response.statusCode
                })
              }
              const header = response.headers["content-type"]
              const media = yield* files.ingest(
                workspaceId,
                {
                  // a remote server's type that is not a media type (strictly read, as a client's)
                  // names nothing: the bytes decide
                  declared: typeof header === "string"
                    ? Option.getOrUndefined(Option.map(MediaType.parseStrict(header), MediaType.format))
                    : undefined,
                  kind,
                  filename: kind === "document" ? nameOf(target.url) : undefined,
                  announced: undefined
                },
                Stream.fromAsyncIterable(response.body as AsyncIterable<Uint8Array>, () => "cut off" as const)
              ).pipe(
                Effect.catchTags({
                  PayloadTooLarge: (error) =>
                    Effect.fail(
                      refusedUrl(kind, "media_too_large", error.message, { limit_bytes: error.details?.limit_bytes })
                    ),
                  ValidationError: (error) =>
                    Effect.fail(
                      error.details?.["reason"] === "body_incomplete"
                        ? refusedUrl(kind, "url_unreachable", "The URL's answer ended early or took too long")
                        : refusedUrl(kind, String(error.details?.["reason"] ?? "media_type_unsupported"), error.message)
                    )
                })
              )
              const row = yield* repo.find(workspaceId, media.id)
              return yield* Option.match(row, {
                onNone: () => Effect.dieMessage("the fetched media is gone"),
                onSome: (r): Effect.Effect<Media.Media> => Effect.succeed(r)
              })
            }),
          (response) =>
            Effect.sync(() => {
              response.body.on("error", () => {})
              response.body.destroy()
            })
        ).pipe(
          Effect.ensuring(Effect.sync(() => clearTimeout(timer))),
          Effect.ensuring(Effect.promise(() => agent.close().catch(() => {})))
        )
      }
    )

    return { fetch } as const
  }),
  dependencies: [MediaFiles.Default, MediaRepo.MediaRepo.Default]
}) {}
