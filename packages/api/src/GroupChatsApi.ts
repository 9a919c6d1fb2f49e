/** Group chats of QR channels (docs/API.md "Group chats"): read what WhatsApp reported. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, GroupChats, Ids, Pagination } from "@switchboard/domain"
import { Schema } from "effect"
import { Authentication, requireScopes } from "./Security.js"

const ChannelPath = Schema.Struct({ channelId: Ids.IdRef("ch") })
const GroupChatPath = Schema.Struct({ groupChatId: Ids.IdRef("gch") })

export class GroupChatsApi extends HttpApiGroup.make("groupChats")
  .add(
    HttpApiEndpoint.get("list", "/v1/channels/:channelId/group-chats")
      .setPath(ChannelPath)
      .setUrlParams(Schema.Struct(Pagination.ListParams))
      .addSuccess(Pagination.Page(GroupChats.GroupChat))
      .addError(Errors.ChannelNotFound)
      .annotate(
        OpenApi.Description,
        "The group chats the channel's number is in or was in (`is_participant`), newest first, synced from WhatsApp when the link opens and on WhatsApp's group updates. Empty for channels other than QR."
      )
      .pipe(requireScopes("channels.read"))
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/group-chats/:groupChatId")
      .setPath(GroupChatPath)
      .addSuccess(GroupChats.GroupChatDetail)
      .addError(Errors.NotFound)
      .annotate(OpenApi.Description, "A group chat with its participants (contacts of the workspace) and their roles.")
      .pipe(requireScopes("channels.read"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Group chats")
{}
