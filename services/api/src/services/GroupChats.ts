/** Group chat use-cases (docs/API.md "Group chats"): a channel's group chats, one with its participants. */
import { ChannelsRepo, GroupChatsRepo } from "@switchboard/db"
import { Errors, type GroupChats as DomainGroupChats, Pagination } from "@switchboard/domain"
import { Effect, Option } from "effect"

const groupChatNotFound = (id: string) =>
  new Errors.NotFound({ message: `No group chat ${id} in this workspace`, details: { resource: "group_chat", id } })

const channelNotFound = (id: string) =>
  new Errors.ChannelNotFound({ message: `No channel ${id} in this workspace`, details: { resource: "channel", id } })

export class GroupChats extends Effect.Service<GroupChats>()("@switchboard/service-api/GroupChats", {
  effect: Effect.gen(function*() {
    const repo = yield* GroupChatsRepo.GroupChatsRepo
    const channels = yield* ChannelsRepo.ChannelsRepo

    const list = Effect.fn("GroupChats.list")(function*(
      workspaceId: string,
      channelId: string,
      query: { readonly limit?: number | undefined; readonly after?: Pagination.CursorPosition | undefined }
    ) {
      if (Option.isNone(yield* channels.find(workspaceId, channelId))) return yield* channelNotFound(channelId)
      const limit = query.limit ?? Pagination.DEFAULT_LIMIT
      return Pagination.toPage(yield* repo.list(workspaceId, channelId, limit, query.after), limit, (g) => g)
    })

    const get = Effect.fn("GroupChats.get")(function*(workspaceId: string, id: DomainGroupChats.GroupChat["id"]) {
      const found = yield* repo.find(workspaceId, id)
      if (Option.isNone(found)) return yield* groupChatNotFound(id)
      return found.value
    })

    return { list, get } as const
  }),
  dependencies: [GroupChatsRepo.GroupChatsRepo.Default, ChannelsRepo.ChannelsRepo.Default]
}) {}
