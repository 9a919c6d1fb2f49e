/**
 * The 404 of an id that names nothing, by kind (docs/API.md "Errors"): the code and `details.resource`
 * a lookup of a well-formed unknown id answers, which a request naming an id that is not even
 * well formed (`msg_123`, `channel_id: "ch_unknown"`) answers too.
 */
import { ApiKeyNotFound, ChannelNotFound, NotFound, TemplateNotFound } from "./Errors.js"
import type { IdPrefix } from "./Ids.js"

/** `details.resource` of each kind of id. */
export const RESOURCE_OF_PREFIX: Record<IdPrefix, string> = {
  key: "api_key",
  msg: "message",
  ch: "channel",
  ws: "workspace",
  wh: "webhook_endpoint",
  whd: "webhook_delivery",
  evt: "event",
  cnv: "conversation",
  cnt: "contact",
  usr: "user",
  sbx: "sandbox_session",
  tpl: "template",
  grp: "contact_group",
  imp: "contact_import",
  nte: "note",
  ses: "session",
  med: "media",
  gch: "group_chat"
}

/** The issue of a request member naming nothing: where, never the value. */
export interface UnknownIdIssue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

/** The resource's 404 for ids of `prefix` that name nothing, `issues` saying which members. */
export const unknownIdError = (prefix: IdPrefix, issues: ReadonlyArray<UnknownIdIssue>) => {
  const resource = RESOURCE_OF_PREFIX[prefix]
  const message = `No ${resource.replace(/_/g, " ")} with this id in this workspace`
  const details = { resource, issues }
  return prefix === "ch"
    ? new ChannelNotFound({ message, details })
    : prefix === "key"
    ? new ApiKeyNotFound({ message, details })
    : prefix === "tpl"
    ? new TemplateNotFound({ message, details })
    : new NotFound({ message, details })
}
