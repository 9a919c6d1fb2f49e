/**
 * The response examples of `ApiExamples.REQUESTS`, by operation id: what a server answered,
 * recorded by test/apiExamples.test.ts (`WRITE_API_EXAMPLES=1`, then `npm run format`). Do not edit
 * by hand: the test fails when a server's answer no longer matches.
 * Over 350 lines: recorded data, one answer per operation, nothing to split.
 */
import type { ResponseExample } from "./ApiExamples.js"

export const RESPONSES: Readonly<Record<string, ResponseExample>> = {
  "health.health": {
    "status": 200,
    "body": {
      "status": "ok"
    }
  },
  "health.ready": {
    "status": 200,
    "body": {
      "status": "ready",
      "checks": {
        "database": {
          "status": "up",
          "latency_ms": 2
        },
        "redis": {
          "status": "disabled",
          "latency_ms": null
        },
        "cluster": {
          "status": "up",
          "latency_ms": 2
        }
      }
    }
  },
  "auth.login": {
    "status": 200,
    "body": {
      "access_token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMDFKRjAwMDAwMDAwMDAwMDAwMDAwMDAwMDEifQ.c2lnbmF0dXJl",
      "token_type": "Bearer",
      "expires_in": 900,
      "refresh_token": "rt_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "user": {
        "id": "usr_01JF0000000000000000000001",
        "object": "user",
        "email": "ada@example.com",
        "name": "Test User",
        "email_verified_at": "2026-01-15T09:30:00.000Z",
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z"
      },
      "workspaces": [
        {
          "id": "ws_01JF0000000000000000000001",
          "name": "Test Workspace",
          "role": "owner",
          "plan": "free",
          "status": "active"
        }
      ]
    }
  },
  "auth.refresh": {
    "status": 200,
    "body": {
      "access_token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMDFKRjAwMDAwMDAwMDAwMDAwMDAwMDAwMDEifQ.c2lnbmF0dXJl",
      "token_type": "Bearer",
      "expires_in": 900,
      "refresh_token": "rt_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "user": {
        "id": "usr_01JF0000000000000000000001",
        "object": "user",
        "email": "ada@example.com",
        "name": "Test User",
        "email_verified_at": "2026-01-15T09:30:00.000Z",
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z"
      },
      "workspaces": [
        {
          "id": "ws_01JF0000000000000000000001",
          "name": "Test Workspace",
          "role": "owner",
          "plan": "free",
          "status": "active"
        }
      ]
    }
  },
  "session.me": {
    "status": 200,
    "body": {
      "user": {
        "id": "usr_01JF0000000000000000000001",
        "object": "user",
        "email": "ada@example.com",
        "name": "Test User",
        "email_verified_at": "2026-01-15T09:30:00.000Z",
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z"
      },
      "workspaces": [
        {
          "id": "ws_01JF0000000000000000000001",
          "name": "Test Workspace",
          "role": "owner",
          "plan": "free",
          "status": "active"
        }
      ]
    }
  },
  "session.members": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "usr_01JF0000000000000000000001",
          "object": "workspace_member",
          "name": "Test User",
          "email": "ada@example.com",
          "role": "owner",
          "status": "active"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "apiKeys.create": {
    "status": 201,
    "body": {
      "id": "key_01JF0000000000000000000002",
      "object": "api_key",
      "name": "CI key",
      "mode": "test",
      "prefix": "wa_test",
      "last4": "xxxx",
      "scopes": [
        "messages.send",
        "messages.read"
      ],
      "expires_at": null,
      "created_at": "2026-01-15T09:30:00.000Z",
      "last_used_at": null,
      "revoked_at": null,
      "secret": "wa_test_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    }
  },
  "apiKeys.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "key_01JF0000000000000000000002",
          "object": "api_key",
          "name": "CI key",
          "mode": "test",
          "prefix": "wa_test",
          "last4": "xxxx",
          "scopes": [
            "messages.send",
            "messages.read"
          ],
          "expires_at": null,
          "created_at": "2026-01-15T09:30:00.000Z",
          "last_used_at": null,
          "revoked_at": null
        },
        {
          "id": "key_01JF0000000000000000000001",
          "object": "api_key",
          "name": "story key",
          "mode": "test",
          "prefix": "wa_test",
          "last4": "xxxx",
          "scopes": [
            "workspace.read",
            "channels.read",
            "channels.manage",
            "messages.read",
            "messages.send",
            "contacts.read",
            "contacts.manage",
            "templates.manage",
            "campaigns.read",
            "campaigns.manage",
            "automations.manage",
            "webhooks.manage"
          ],
          "expires_at": null,
          "created_at": "2026-01-15T09:30:00.000Z",
          "last_used_at": "2026-01-15T09:30:00.000Z",
          "revoked_at": null
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "plan.plan": {
    "status": 200,
    "body": {
      "workspace_id": "ws_01JF0000000000000000000001",
      "plan": "free",
      "entitlements": {
        "monthly_message_quota": {
          "value": null,
          "unlimited": true,
          "source": "plan",
          "enforced": true
        },
        "production_channels": {
          "value": 1,
          "unlimited": false,
          "source": "plan",
          "enforced": true
        },
        "contacts": {
          "value": 500,
          "unlimited": false,
          "source": "plan",
          "enforced": true
        },
        "webhook_endpoints": {
          "value": 1,
          "unlimited": false,
          "source": "plan",
          "enforced": true
        },
        "shared_test_sessions": {
          "value": 1,
          "unlimited": false,
          "source": "plan",
          "enforced": true
        },
        "sandbox_message_quota": {
          "value": null,
          "unlimited": true,
          "source": "plan",
          "enforced": false
        },
        "verified_sandbox_recipients": {
          "value": 1,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "api_keys": {
          "value": 2,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "team_seats": {
          "value": 1,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "active_automations": {
          "value": 2,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "campaigns_enabled": {
          "value": false,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "admin_log_retention_days": {
          "value": 7,
          "unlimited": false,
          "source": "plan",
          "enforced": false
        },
        "support_tier": {
          "value": "docs",
          "unlimited": false,
          "source": "plan",
          "enforced": false
        }
      }
    }
  },
  "sandbox.create": {
    "status": 201,
    "body": {
      "id": "sbx_01JF0000000000000000000001",
      "object": "sandbox_session",
      "channel_id": "ch_01JF0000000000000000000001",
      "phone_number": "+15550200000",
      "status": "active",
      "verified_recipients": [],
      "expires_at": "2026-01-15T09:30:00.000Z",
      "created_at": "2026-01-15T09:30:00.000Z",
      "verification": {
        "code": "123456",
        "instructions":
          "Verify each recipient with POST /v1/sandbox/sessions/sbx_01JF0000000000000000000001/verify {\"phone_number\": \"+...\", \"code\": \"123456\"}. Messages then go from +15550200000. This code is shown once. The sandbox is a simulated network: no phone ever receives its messages, and this code is shown to you (no SMS is sent) so that you verify a recipient yourself. To reach real phones, link your own WhatsApp number as a QR channel (docs/QR-CHANNELS.md)."
      }
    }
  },
  "sandbox.verify": {
    "status": 200,
    "body": {
      "id": "sbx_01JF0000000000000000000001",
      "object": "sandbox_session",
      "channel_id": "ch_01JF0000000000000000000001",
      "phone_number": "+15550200000",
      "status": "active",
      "verified_recipients": [
        "+4915112345678"
      ],
      "expires_at": "2026-01-15T09:30:00.000Z",
      "created_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "sandbox.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "sbx_01JF0000000000000000000001",
          "object": "sandbox_session",
          "channel_id": "ch_01JF0000000000000000000001",
          "phone_number": "+15550200000",
          "status": "active",
          "verified_recipients": [
            "+4915112345678"
          ],
          "expires_at": "2026-01-15T09:30:00.000Z",
          "created_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "sandbox.get": {
    "status": 200,
    "body": {
      "id": "sbx_01JF0000000000000000000001",
      "object": "sandbox_session",
      "channel_id": "ch_01JF0000000000000000000001",
      "phone_number": "+15550200000",
      "status": "active",
      "verified_recipients": [
        "+4915112345678"
      ],
      "expires_at": "2026-01-15T09:30:00.000Z",
      "created_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "channels.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "ch_01JF0000000000000000000001",
          "object": "channel",
          "workspace_id": "ws_01JF0000000000000000000001",
          "name": "Sandbox +15550200000 (ABC123)",
          "provider": "sandbox",
          "status": "connected",
          "status_reason": null,
          "is_default": true,
          "phone_number": "+15550200000",
          "call_policy": {
            "reject": false,
            "reply_text": null
          },
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "archived_at": null
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "channels.get": {
    "status": 200,
    "body": {
      "id": "ch_01JF0000000000000000000001",
      "object": "channel",
      "workspace_id": "ws_01JF0000000000000000000001",
      "name": "Sandbox +15550200000 (ABC123)",
      "provider": "sandbox",
      "status": "connected",
      "status_reason": null,
      "is_default": true,
      "phone_number": "+15550200000",
      "call_policy": {
        "reject": false,
        "reply_text": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "channels.capabilities": {
    "status": 200,
    "body": {
      "channel_id": "ch_01JF0000000000000000000001",
      "provider": "sandbox",
      "max_throughput_mps": 2,
      "message_types": [
        "text",
        "image",
        "document",
        "audio",
        "video",
        "sticker",
        "location",
        "reaction"
      ],
      "refreshed_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "messages.send": {
    "status": 201,
    "body": {
      "id": "msg_01JF0000000000000000000001",
      "object": "message",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "direction": "outbound",
      "from": "+15550200000",
      "to": "+4915112345678",
      "type": "text",
      "text": {
        "body": "Your order #1042 has shipped."
      },
      "context": {
        "reply_to": null
      },
      "sender": null,
      "media": null,
      "template": null,
      "category": "utility",
      "status": "queued",
      "failure": null,
      "metadata": {},
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "sent_at": null,
      "delivered_at": null,
      "read_at": null
    }
  },
  "messages.get": {
    "status": 200,
    "body": {
      "id": "msg_01JF0000000000000000000001",
      "object": "message",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "direction": "outbound",
      "from": "+15550200000",
      "to": "+4915112345678",
      "type": "text",
      "text": {
        "body": "Your order #1042 has shipped."
      },
      "context": {
        "reply_to": null
      },
      "sender": null,
      "media": null,
      "template": null,
      "category": "utility",
      "status": "read",
      "failure": null,
      "metadata": {},
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "sent_at": "2026-01-15T09:30:00.000Z",
      "delivered_at": "2026-01-15T09:30:00.000Z",
      "read_at": "2026-01-15T09:30:00.000Z",
      "timeline": [
        {
          "from_state": null,
          "to_state": "queued",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        },
        {
          "from_state": "queued",
          "to_state": "dispatching",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        },
        {
          "from_state": "dispatching",
          "to_state": "provider_accepted",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        },
        {
          "from_state": "provider_accepted",
          "to_state": "sent",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        },
        {
          "from_state": "sent",
          "to_state": "delivered",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        },
        {
          "from_state": "delivered",
          "to_state": "read",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        }
      ]
    }
  },
  "messages.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "msg_01JF0000000000000000000001",
          "object": "message",
          "workspace_id": "ws_01JF0000000000000000000001",
          "channel_id": "ch_01JF0000000000000000000001",
          "conversation_id": "cnv_01JF0000000000000000000001",
          "contact_id": "cnt_01JF0000000000000000000001",
          "direction": "outbound",
          "from": "+15550200000",
          "to": "+4915112345678",
          "type": "text",
          "text": {
            "body": "Your order #1042 has shipped."
          },
          "context": {
            "reply_to": null
          },
          "sender": null,
          "media": null,
          "template": null,
          "category": "utility",
          "status": "read",
          "failure": null,
          "metadata": {},
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "sent_at": "2026-01-15T09:30:00.000Z",
          "delivered_at": "2026-01-15T09:30:00.000Z",
          "read_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "media.upload": {
    "status": 201,
    "body": {
      "id": "med_01JF0000000000000000000001",
      "object": "media",
      "kind": "image",
      "mime_type": "image/png",
      "size_bytes": 79,
      "sha256": "807def2a22b60fd8f6bfe125d33e36adba41bbb1754f9c03f840293a8420fe12",
      "filename": "menu.png",
      "status": "ready",
      "failure_reason": null,
      "message_id": null,
      "created_at": "2026-01-15T09:30:00.000Z",
      "expires_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "media.get": {
    "status": 200,
    "body": {
      "id": "med_01JF0000000000000000000001",
      "object": "media",
      "kind": "image",
      "mime_type": "image/png",
      "size_bytes": 79,
      "sha256": "807def2a22b60fd8f6bfe125d33e36adba41bbb1754f9c03f840293a8420fe12",
      "filename": "menu.png",
      "status": "ready",
      "failure_reason": null,
      "message_id": null,
      "created_at": "2026-01-15T09:30:00.000Z",
      "expires_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "media.content": {
    "status": 200
  },
  "sandbox.inbound": {
    "status": 202,
    "body": {
      "object": "sandbox_inbound",
      "message_id": "msg_01JF0000000000000000000002",
      "conversation_id": "cnv_01JF0000000000000000000001"
    }
  },
  "conversations.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "cnv_01JF0000000000000000000001",
          "object": "conversation",
          "workspace_id": "ws_01JF0000000000000000000001",
          "channel_id": "ch_01JF0000000000000000000001",
          "contact_id": "cnt_01JF0000000000000000000001",
          "contact": {
            "id": "cnt_01JF0000000000000000000001",
            "object": "contact",
            "phone_number": "+4915112345678",
            "whatsapp_lid": null,
            "name": null
          },
          "status": "open",
          "assignee_id": null,
          "last_message_at": "2026-01-15T09:30:00.000Z",
          "last_message": {
            "id": "msg_01JF0000000000000000000002",
            "object": "message",
            "workspace_id": "ws_01JF0000000000000000000001",
            "channel_id": "ch_01JF0000000000000000000001",
            "conversation_id": "cnv_01JF0000000000000000000001",
            "contact_id": "cnt_01JF0000000000000000000001",
            "direction": "inbound",
            "from": "+4915112345678",
            "to": "+15550200000",
            "type": "text",
            "text": {
              "body": "Thanks! When does it arrive?"
            },
            "context": {
              "reply_to": null
            },
            "sender": {
              "phone_number": "+4915112345678",
              "whatsapp_lid": null
            },
            "media": null,
            "template": null,
            "category": "utility",
            "status": "delivered",
            "failure": null,
            "metadata": {},
            "created_at": "2026-01-15T09:30:00.000Z",
            "updated_at": "2026-01-15T09:30:00.000Z",
            "sent_at": null,
            "delivered_at": "2026-01-15T09:30:00.000Z",
            "read_at": null
          },
          "last_inbound_at": "2026-01-15T09:30:00.000Z",
          "last_read_at": null,
          "unread_count": 1,
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "conversations.get": {
    "status": 200,
    "body": {
      "id": "cnv_01JF0000000000000000000001",
      "object": "conversation",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "contact": {
        "id": "cnt_01JF0000000000000000000001",
        "object": "contact",
        "phone_number": "+4915112345678",
        "whatsapp_lid": null,
        "name": null
      },
      "status": "open",
      "assignee_id": null,
      "last_message_at": "2026-01-15T09:30:00.000Z",
      "last_message": {
        "id": "msg_01JF0000000000000000000002",
        "object": "message",
        "workspace_id": "ws_01JF0000000000000000000001",
        "channel_id": "ch_01JF0000000000000000000001",
        "conversation_id": "cnv_01JF0000000000000000000001",
        "contact_id": "cnt_01JF0000000000000000000001",
        "direction": "inbound",
        "from": "+4915112345678",
        "to": "+15550200000",
        "type": "text",
        "text": {
          "body": "Thanks! When does it arrive?"
        },
        "context": {
          "reply_to": null
        },
        "sender": {
          "phone_number": "+4915112345678",
          "whatsapp_lid": null
        },
        "media": null,
        "template": null,
        "category": "utility",
        "status": "delivered",
        "failure": null,
        "metadata": {},
        "created_at": "2026-01-15T09:30:00.000Z",
        "updated_at": "2026-01-15T09:30:00.000Z",
        "sent_at": null,
        "delivered_at": "2026-01-15T09:30:00.000Z",
        "read_at": null
      },
      "last_inbound_at": "2026-01-15T09:30:00.000Z",
      "last_read_at": null,
      "unread_count": 1,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "conversations.messages": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "msg_01JF0000000000000000000002",
          "object": "message",
          "workspace_id": "ws_01JF0000000000000000000001",
          "channel_id": "ch_01JF0000000000000000000001",
          "conversation_id": "cnv_01JF0000000000000000000001",
          "contact_id": "cnt_01JF0000000000000000000001",
          "direction": "inbound",
          "from": "+4915112345678",
          "to": "+15550200000",
          "type": "text",
          "text": {
            "body": "Thanks! When does it arrive?"
          },
          "context": {
            "reply_to": null
          },
          "sender": {
            "phone_number": "+4915112345678",
            "whatsapp_lid": null
          },
          "media": null,
          "template": null,
          "category": "utility",
          "status": "delivered",
          "failure": null,
          "metadata": {},
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "sent_at": null,
          "delivered_at": "2026-01-15T09:30:00.000Z",
          "read_at": null
        },
        {
          "id": "msg_01JF0000000000000000000001",
          "object": "message",
          "workspace_id": "ws_01JF0000000000000000000001",
          "channel_id": "ch_01JF0000000000000000000001",
          "conversation_id": "cnv_01JF0000000000000000000001",
          "contact_id": "cnt_01JF0000000000000000000001",
          "direction": "outbound",
          "from": "+15550200000",
          "to": "+4915112345678",
          "type": "text",
          "text": {
            "body": "Your order #1042 has shipped."
          },
          "context": {
            "reply_to": null
          },
          "sender": null,
          "media": null,
          "template": null,
          "category": "utility",
          "status": "read",
          "failure": null,
          "metadata": {},
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "sent_at": "2026-01-15T09:30:00.000Z",
          "delivered_at": "2026-01-15T09:30:00.000Z",
          "read_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "conversations.markRead": {
    "status": 200,
    "body": {
      "id": "cnv_01JF0000000000000000000001",
      "object": "conversation",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "contact": {
        "id": "cnt_01JF0000000000000000000001",
        "object": "contact",
        "phone_number": "+4915112345678",
        "whatsapp_lid": null,
        "name": null
      },
      "status": "open",
      "assignee_id": null,
      "last_message_at": "2026-01-15T09:30:00.000Z",
      "last_message": {
        "id": "msg_01JF0000000000000000000002",
        "object": "message",
        "workspace_id": "ws_01JF0000000000000000000001",
        "channel_id": "ch_01JF0000000000000000000001",
        "conversation_id": "cnv_01JF0000000000000000000001",
        "contact_id": "cnt_01JF0000000000000000000001",
        "direction": "inbound",
        "from": "+4915112345678",
        "to": "+15550200000",
        "type": "text",
        "text": {
          "body": "Thanks! When does it arrive?"
        },
        "context": {
          "reply_to": null
        },
        "sender": {
          "phone_number": "+4915112345678",
          "whatsapp_lid": null
        },
        "media": null,
        "template": null,
        "category": "utility",
        "status": "delivered",
        "failure": null,
        "metadata": {},
        "created_at": "2026-01-15T09:30:00.000Z",
        "updated_at": "2026-01-15T09:30:00.000Z",
        "sent_at": null,
        "delivered_at": "2026-01-15T09:30:00.000Z",
        "read_at": null
      },
      "last_inbound_at": "2026-01-15T09:30:00.000Z",
      "last_read_at": "2026-01-15T09:30:00.000Z",
      "unread_count": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "messages.markRead": {
    "status": 200,
    "body": {
      "id": "msg_01JF0000000000000000000002",
      "object": "message",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "direction": "inbound",
      "from": "+4915112345678",
      "to": "+15550200000",
      "type": "text",
      "text": {
        "body": "Thanks! When does it arrive?"
      },
      "context": {
        "reply_to": null
      },
      "sender": {
        "phone_number": "+4915112345678",
        "whatsapp_lid": null
      },
      "media": null,
      "template": null,
      "category": "utility",
      "status": "delivered",
      "failure": null,
      "metadata": {},
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "sent_at": null,
      "delivered_at": "2026-01-15T09:30:00.000Z",
      "read_at": "2026-01-15T09:30:00.000Z",
      "timeline": [
        {
          "from_state": null,
          "to_state": "delivered",
          "at": "2026-01-15T09:30:00.000Z",
          "reason": null
        }
      ]
    }
  },
  "conversations.addNote": {
    "status": 201,
    "body": {
      "id": "nte_01JF0000000000000000000001",
      "object": "conversation_note",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "body": "Asked about delivery: tracking link sent.",
      "author": {
        "type": "api_key",
        "id": "key_01JF0000000000000000000001"
      },
      "created_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "conversations.notes": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "nte_01JF0000000000000000000001",
          "object": "conversation_note",
          "conversation_id": "cnv_01JF0000000000000000000001",
          "body": "Asked about delivery: tracking link sent.",
          "author": {
            "type": "api_key",
            "id": "key_01JF0000000000000000000001"
          },
          "created_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "conversations.update": {
    "status": 200,
    "body": {
      "id": "cnv_01JF0000000000000000000001",
      "object": "conversation",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "contact": {
        "id": "cnt_01JF0000000000000000000001",
        "object": "contact",
        "phone_number": "+4915112345678",
        "whatsapp_lid": null,
        "name": null
      },
      "status": "closed",
      "assignee_id": null,
      "last_message_at": "2026-01-15T09:30:00.000Z",
      "last_message": {
        "id": "msg_01JF0000000000000000000002",
        "object": "message",
        "workspace_id": "ws_01JF0000000000000000000001",
        "channel_id": "ch_01JF0000000000000000000001",
        "conversation_id": "cnv_01JF0000000000000000000001",
        "contact_id": "cnt_01JF0000000000000000000001",
        "direction": "inbound",
        "from": "+4915112345678",
        "to": "+15550200000",
        "type": "text",
        "text": {
          "body": "Thanks! When does it arrive?"
        },
        "context": {
          "reply_to": null
        },
        "sender": {
          "phone_number": "+4915112345678",
          "whatsapp_lid": null
        },
        "media": null,
        "template": null,
        "category": "utility",
        "status": "delivered",
        "failure": null,
        "metadata": {},
        "created_at": "2026-01-15T09:30:00.000Z",
        "updated_at": "2026-01-15T09:30:00.000Z",
        "sent_at": null,
        "delivered_at": "2026-01-15T09:30:00.000Z",
        "read_at": "2026-01-15T09:30:00.000Z"
      },
      "last_inbound_at": "2026-01-15T09:30:00.000Z",
      "last_read_at": "2026-01-15T09:30:00.000Z",
      "unread_count": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "conversations.reply": {
    "status": 201,
    "body": {
      "id": "msg_01JF0000000000000000000003",
      "object": "message",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "direction": "outbound",
      "from": "+15550200000",
      "to": "+4915112345678",
      "type": "text",
      "text": {
        "body": "It arrives tomorrow before noon (this reply reopens the conversation)."
      },
      "context": {
        "reply_to": null
      },
      "sender": null,
      "media": null,
      "template": null,
      "category": "utility",
      "status": "queued",
      "failure": null,
      "metadata": {},
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "sent_at": null,
      "delivered_at": null,
      "read_at": null
    }
  },
  "plan.usage": {
    "status": 200,
    "body": {
      "period": {
        "start": "2026-01-15T09:30:00.000Z",
        "end": "2026-01-15T09:30:00.000Z"
      },
      "metered": {
        "messages_sent": {
          "used": 0,
          "limit": null,
          "unlimited": true,
          "remaining": null
        },
        "sandbox_messages": {
          "used": 2,
          "limit": null,
          "unlimited": true,
          "remaining": null
        }
      },
      "current": {
        "contacts": {
          "used": 1,
          "limit": 500,
          "unlimited": false,
          "remaining": 499
        },
        "connected_channels": {
          "used": 0,
          "limit": 1,
          "unlimited": false,
          "remaining": 1
        },
        "api_keys": {
          "used": 2,
          "limit": 2,
          "unlimited": false,
          "remaining": 0
        },
        "seats": {
          "used": 1,
          "limit": 1,
          "unlimited": false,
          "remaining": 0
        },
        "webhook_endpoints": {
          "used": 0,
          "limit": 1,
          "unlimited": false,
          "remaining": 1
        },
        "media_bytes": {
          "used": 79,
          "limit": null,
          "unlimited": true,
          "remaining": null
        }
      }
    }
  },
  "contacts.create": {
    "status": 201,
    "body": {
      "id": "cnt_01JF0000000000000000000002",
      "object": "contact",
      "phone_number": "+4915112345679",
      "whatsapp_lid": null,
      "name": "Ada Lovelace",
      "email": null,
      "attributes": {
        "city": "Berlin"
      },
      "tags": [
        "vip"
      ],
      "group_ids": [],
      "whatsapp": {
        "status": "unknown",
        "checked_at": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contacts.get": {
    "status": 200,
    "body": {
      "id": "cnt_01JF0000000000000000000002",
      "object": "contact",
      "phone_number": "+4915112345679",
      "whatsapp_lid": null,
      "name": "Ada Lovelace",
      "email": null,
      "attributes": {
        "city": "Berlin"
      },
      "tags": [
        "vip"
      ],
      "group_ids": [],
      "whatsapp": {
        "status": "unknown",
        "checked_at": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contacts.update": {
    "status": 200,
    "body": {
      "id": "cnt_01JF0000000000000000000002",
      "object": "contact",
      "phone_number": "+4915112345679",
      "whatsapp_lid": null,
      "name": "Ada Lovelace",
      "email": null,
      "attributes": {
        "city": "Berlin"
      },
      "tags": [
        "vip",
        "newsletter"
      ],
      "group_ids": [],
      "whatsapp": {
        "status": "unknown",
        "checked_at": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contacts.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "cnt_01JF0000000000000000000002",
          "object": "contact",
          "phone_number": "+4915112345679",
          "whatsapp_lid": null,
          "name": "Ada Lovelace",
          "email": null,
          "attributes": {
            "city": "Berlin"
          },
          "tags": [
            "vip",
            "newsletter"
          ],
          "group_ids": [],
          "whatsapp": {
            "status": "unknown",
            "checked_at": null
          },
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "contacts.tags": {
    "status": 200,
    "body": {
      "data": [
        {
          "object": "contact_tag",
          "tag": "newsletter",
          "contact_count": 1
        },
        {
          "object": "contact_tag",
          "tag": "vip",
          "contact_count": 1
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "contactGroups.create": {
    "status": 201,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "name": "Berlin customers",
      "description": "Ship from the Berlin store",
      "member_count": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactGroups.addMembers": {
    "status": 200,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "name": "Berlin customers",
      "description": "Ship from the Berlin store",
      "member_count": 1,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactGroups.get": {
    "status": 200,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "name": "Berlin customers",
      "description": "Ship from the Berlin store",
      "member_count": 1,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactGroups.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "grp_01JF0000000000000000000001",
          "object": "contact_group",
          "name": "Berlin customers",
          "description": "Ship from the Berlin store",
          "member_count": 1,
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "contactGroups.update": {
    "status": 200,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "name": "Berlin VIPs",
      "description": "Ship from the Berlin store",
      "member_count": 1,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactGroups.removeMember": {
    "status": 200,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "name": "Berlin VIPs",
      "description": "Ship from the Berlin store",
      "member_count": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactGroups.delete": {
    "status": 200,
    "body": {
      "id": "grp_01JF0000000000000000000001",
      "object": "contact_group",
      "deleted": true
    }
  },
  "contacts.delete": {
    "status": 200,
    "body": {
      "id": "cnt_01JF0000000000000000000002",
      "object": "contact",
      "deleted": true
    }
  },
  "templates.create": {
    "status": 201,
    "body": {
      "id": "tpl_01JF0000000000000000000001",
      "object": "template",
      "workspace_id": "ws_01JF0000000000000000000001",
      "slug": "order_shipped",
      "name": "Order shipped",
      "category": "utility",
      "language": "en",
      "body": "Hi {{name}}, your order {{order}} has shipped.",
      "variables": [
        {
          "name": "name",
          "required": true,
          "example": null
        },
        {
          "name": "order",
          "required": true,
          "example": "#1042"
        }
      ],
      "status": "active",
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "templates.get": {
    "status": 200,
    "body": {
      "id": "tpl_01JF0000000000000000000001",
      "object": "template",
      "workspace_id": "ws_01JF0000000000000000000001",
      "slug": "order_shipped",
      "name": "Order shipped",
      "category": "utility",
      "language": "en",
      "body": "Hi {{name}}, your order {{order}} has shipped.",
      "variables": [
        {
          "name": "name",
          "required": true,
          "example": null
        },
        {
          "name": "order",
          "required": true,
          "example": "#1042"
        }
      ],
      "status": "active",
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "templates.testSend": {
    "status": 201,
    "body": {
      "id": "msg_01JF0000000000000000000004",
      "object": "message",
      "workspace_id": "ws_01JF0000000000000000000001",
      "channel_id": "ch_01JF0000000000000000000001",
      "conversation_id": "cnv_01JF0000000000000000000001",
      "contact_id": "cnt_01JF0000000000000000000001",
      "direction": "outbound",
      "from": "+15550200000",
      "to": "+4915112345678",
      "type": "template",
      "text": {
        "body": "Hi Ada, your order #1042 has shipped."
      },
      "context": {
        "reply_to": null
      },
      "sender": null,
      "media": null,
      "template": {
        "id": "tpl_01JF0000000000000000000001",
        "slug": "order_shipped",
        "variables": {
          "order": "#1042",
          "name": "Ada"
        }
      },
      "category": "utility",
      "status": "queued",
      "failure": null,
      "metadata": {},
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "sent_at": null,
      "delivered_at": null,
      "read_at": null
    }
  },
  "templates.update": {
    "status": 200,
    "body": {
      "id": "tpl_01JF0000000000000000000001",
      "object": "template",
      "workspace_id": "ws_01JF0000000000000000000001",
      "slug": "order_shipped",
      "name": "Order shipped (v2)",
      "category": "utility",
      "language": "en",
      "body": "Hi {{name}}, your order {{order}} has shipped.",
      "variables": [
        {
          "name": "name",
          "required": true,
          "example": null
        },
        {
          "name": "order",
          "required": true,
          "example": "#1042"
        }
      ],
      "status": "active",
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "templates.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "tpl_01JF0000000000000000000001",
          "object": "template",
          "workspace_id": "ws_01JF0000000000000000000001",
          "slug": "order_shipped",
          "name": "Order shipped (v2)",
          "category": "utility",
          "language": "en",
          "body": "Hi {{name}}, your order {{order}} has shipped.",
          "variables": [
            {
              "name": "name",
              "required": true,
              "example": null
            },
            {
              "name": "order",
              "required": true,
              "example": "#1042"
            }
          ],
          "status": "active",
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "archived_at": null
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "templates.archive": {
    "status": 200,
    "body": {
      "id": "tpl_01JF0000000000000000000001",
      "object": "template",
      "workspace_id": "ws_01JF0000000000000000000001",
      "slug": "order_shipped",
      "name": "Order shipped (v2)",
      "category": "utility",
      "language": "en",
      "body": "Hi {{name}}, your order {{order}} has shipped.",
      "variables": [
        {
          "name": "name",
          "required": true,
          "example": null
        },
        {
          "name": "order",
          "required": true,
          "example": "#1042"
        }
      ],
      "status": "archived",
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactImports.create": {
    "status": 202,
    "body": {
      "id": "imp_01JF0000000000000000000001",
      "object": "contact_import",
      "status": "queued",
      "on_conflict": "skip",
      "default_country": "DE",
      "tags": [
        "imported"
      ],
      "group_id": null,
      "total_rows": 2,
      "processed_rows": 0,
      "created": 0,
      "updated": 0,
      "skipped": 0,
      "failed": 0,
      "errors": [],
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "completed_at": null
    }
  },
  "contactImports.get": {
    "status": 200,
    "body": {
      "id": "imp_01JF0000000000000000000001",
      "object": "contact_import",
      "status": "completed",
      "on_conflict": "skip",
      "default_country": "DE",
      "tags": [
        "imported"
      ],
      "group_id": null,
      "total_rows": 2,
      "processed_rows": 2,
      "created": 2,
      "updated": 0,
      "skipped": 0,
      "failed": 0,
      "errors": [],
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "completed_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "contactImports.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "imp_01JF0000000000000000000001",
          "object": "contact_import",
          "status": "completed",
          "on_conflict": "skip",
          "default_country": "DE",
          "tags": [
            "imported"
          ],
          "group_id": null,
          "total_rows": 2,
          "processed_rows": 2,
          "created": 2,
          "updated": 0,
          "skipped": 0,
          "failed": 0,
          "errors": [],
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "completed_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "webhooks.eventTypes": {
    "status": 200,
    "body": {
      "data": [
        {
          "type": "message.received",
          "emitted": true
        },
        {
          "type": "message.queued",
          "emitted": true
        },
        {
          "type": "message.sent",
          "emitted": true
        }
      ],
      "page": {
        "next_cursor": "eyJrIjoibWVzc2FnZS5zZW50In0",
        "has_more": true
      }
    }
  },
  "webhooks.list": {
    "status": 200,
    "body": {
      "data": [],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "webhooks.deliveries": {
    "status": 200,
    "body": {
      "data": [],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "webhooks.create": {
    "status": 201,
    "body": {
      "id": "wh_01JF0000000000000000000001",
      "object": "webhook_endpoint",
      "url": "https://hooks.example.com/switchboard",
      "event_types": [
        "message.received"
      ],
      "description": "Inbound messages",
      "status": "active",
      "secret_last4": "xxxx",
      "consecutive_failures": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "secret": "whsec_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    }
  },
  "webhooks.get": {
    "status": 200,
    "body": {
      "id": "wh_01JF0000000000000000000001",
      "object": "webhook_endpoint",
      "url": "https://hooks.example.com/switchboard",
      "event_types": [
        "message.received"
      ],
      "description": "Inbound messages",
      "status": "active",
      "secret_last4": "xxxx",
      "consecutive_failures": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "webhooks.update": {
    "status": 200,
    "body": {
      "id": "wh_01JF0000000000000000000001",
      "object": "webhook_endpoint",
      "url": "https://hooks.example.com/switchboard",
      "event_types": [
        "message.received"
      ],
      "description": "Inbound messages (CRM)",
      "status": "active",
      "secret_last4": "xxxx",
      "consecutive_failures": 0,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "webhooks.rotateSecret": {
    "status": 200,
    "body": {
      "id": "wh_01JF0000000000000000000001",
      "secret": "whsec_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "secret_last4": "xxxx",
      "secret_rotated_at": "2026-01-15T09:30:00.000Z",
      "previous_secret_expires_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "webhooks.test": {
    "status": 202,
    "body": {
      "event_id": "evt_01JF0000000000000000000001",
      "delivery_id": "whd_01JF0000000000000000000001"
    }
  },
  "webhooks.delivery": {
    "status": 200,
    "body": {
      "id": "whd_01JF0000000000000000000001",
      "object": "webhook_delivery",
      "endpoint_id": "wh_01JF0000000000000000000001",
      "event_id": "evt_01JF0000000000000000000001",
      "event_type": "message.received",
      "status": "dead",
      "attempt_count": 6,
      "max_attempts": 6,
      "response_status": 500,
      "failure_reason": "server_error",
      "latency_ms": 2,
      "replay_count": 0,
      "replay_of": null,
      "is_test": true,
      "next_attempt_at": null,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "attempts": [
        {
          "attempt": 1,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        },
        {
          "attempt": 2,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        },
        {
          "attempt": 3,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        },
        {
          "attempt": 4,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        },
        {
          "attempt": 5,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        },
        {
          "attempt": 6,
          "at": "2026-01-15T09:30:00.000Z",
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2
        }
      ]
    }
  },
  "webhooks.replay": {
    "status": 202,
    "body": {
      "delivery_id": "whd_01JF0000000000000000000002",
      "event_id": "evt_01JF0000000000000000000001"
    }
  },
  "webhooks.endpointDeliveries": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "whd_01JF0000000000000000000002",
          "object": "webhook_delivery",
          "endpoint_id": "wh_01JF0000000000000000000001",
          "event_id": "evt_01JF0000000000000000000001",
          "event_type": "message.received",
          "status": "succeeded",
          "attempt_count": 1,
          "max_attempts": 6,
          "response_status": 200,
          "failure_reason": "ok",
          "latency_ms": 2,
          "replay_count": 0,
          "replay_of": "whd_01JF0000000000000000000001",
          "is_test": true,
          "next_attempt_at": null,
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "attempts": [
            {
              "attempt": 1,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 200,
              "failure_reason": "ok",
              "latency_ms": 2
            }
          ]
        },
        {
          "id": "whd_01JF0000000000000000000001",
          "object": "webhook_delivery",
          "endpoint_id": "wh_01JF0000000000000000000001",
          "event_id": "evt_01JF0000000000000000000001",
          "event_type": "message.received",
          "status": "dead",
          "attempt_count": 6,
          "max_attempts": 6,
          "response_status": 500,
          "failure_reason": "server_error",
          "latency_ms": 2,
          "replay_count": 1,
          "replay_of": null,
          "is_test": true,
          "next_attempt_at": null,
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z",
          "attempts": [
            {
              "attempt": 1,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            },
            {
              "attempt": 2,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            },
            {
              "attempt": 3,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            },
            {
              "attempt": 4,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            },
            {
              "attempt": 5,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            },
            {
              "attempt": 6,
              "at": "2026-01-15T09:30:00.000Z",
              "response_status": 500,
              "failure_reason": "server_error",
              "latency_ms": 2
            }
          ]
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "webhooks.delete": {
    "status": 200,
    "body": {
      "id": "wh_01JF0000000000000000000001",
      "object": "webhook_endpoint",
      "deleted": true
    }
  },
  "channels.create": {
    "status": 201,
    "body": {
      "id": "ch_01JF0000000000000000000002",
      "object": "channel",
      "workspace_id": "ws_01JF0000000000000000000001",
      "name": "Support line",
      "provider": "qr",
      "status": "pending",
      "status_reason": null,
      "is_default": false,
      "phone_number": null,
      "call_policy": {
        "reject": false,
        "reply_text": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "qrPairing.start": {
    "status": 200,
    "body": {
      "channel_id": "ch_01JF0000000000000000000002",
      "status": "connecting",
      "qr_available": false,
      "qr_expires_at": null,
      "phone_number": null,
      "pairing_started_at": "2026-01-15T09:30:00.000Z",
      "pairing_code_available": false,
      "pairing_code_expires_at": null,
      "connection_error": null
    }
  },
  "qrPairing.status": {
    "status": 200,
    "body": {
      "channel_id": "ch_01JF0000000000000000000002",
      "status": "awaiting_scan",
      "qr_available": true,
      "qr_expires_at": "2026-01-15T09:30:00.000Z",
      "phone_number": null,
      "pairing_started_at": "2026-01-15T09:30:00.000Z",
      "pairing_code_available": false,
      "pairing_code_expires_at": null,
      "connection_error": null
    }
  },
  "qrPairing.stream": {
    "status": 200,
    "text":
      "event: snapshot\nid: 1\ndata: {\"channel_id\":\"ch_01JF0000000000000000000002\",\"status\":\"awaiting_scan\",\"qr_available\":true,\"qr\":\"2@ExampleRef,ExampleNoiseKey=,ExampleIdentityKey=,ExampleAdvSecret=\",\"qr_expires_at\":\"2026-01-15T09:30:00.000Z\",\"pairing_code_available\":false,\"pairing_code\":null,\"pairing_code_expires_at\":null,\"phone_number\":null,\"connection_error\":null}\n\nevent: qr.state\ndata: {\"channel_id\":\"ch_01JF0000000000000000000002\",\"from_status\":\"awaiting_scan\",\"to_status\":\"connected\",\"reason\":\"paired\",\"connection_error\":null}\n\n"
  },
  "qrPairing.safety": {
    "status": 200,
    "body": {
      "channel_id": "ch_01JF0000000000000000000002",
      "limit": 200,
      "sent_24h": 0,
      "queued": 0,
      "remaining": 200,
      "sends_24h": {
        "new_contacts": 0,
        "existing_contacts": 0
      },
      "recipient_checks_24h": {
        "on_whatsapp": 0,
        "not_on_whatsapp": 0
      },
      "restrictions": {
        "timelock_until": null,
        "new_chat_quota": null,
        "last_signal": null,
        "held_by_timelock": 0
      },
      "warm_up": {
        "status": "warming_up",
        "override": "none",
        "linked_at": "2026-01-15T09:30:00.000Z",
        "day": 1,
        "days": 14,
        "limit": 20,
        "new_contacts_24h": 0,
        "remaining": 20,
        "next_day_at": "2026-01-15T09:30:00.000Z",
        "ends_at": "2026-01-15T09:30:00.000Z"
      }
    }
  },
  "groupChats.list": {
    "status": 200,
    "body": {
      "data": [
        {
          "id": "gch_01JF0000000000000000000001",
          "object": "group_chat",
          "channel_id": "ch_01JF0000000000000000000002",
          "whatsapp_group_id": "120363000000000001",
          "subject": "Berlin store team",
          "description": "Orders and shifts",
          "participant_count": 2,
          "is_admin": false,
          "announce_only": false,
          "is_participant": true,
          "created_at": "2026-01-15T09:30:00.000Z",
          "updated_at": "2026-01-15T09:30:00.000Z"
        }
      ],
      "page": {
        "next_cursor": null,
        "has_more": false
      }
    }
  },
  "groupChats.get": {
    "status": 200,
    "body": {
      "id": "gch_01JF0000000000000000000001",
      "object": "group_chat",
      "channel_id": "ch_01JF0000000000000000000002",
      "whatsapp_group_id": "120363000000000001",
      "subject": "Berlin store team",
      "description": "Orders and shifts",
      "participant_count": 2,
      "is_admin": false,
      "announce_only": false,
      "is_participant": true,
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "participants": [
        {
          "contact_id": "cnt_01JF0000000000000000000003",
          "phone_number": "+447700900501",
          "whatsapp_lid": null,
          "role": "superadmin"
        },
        {
          "contact_id": "cnt_01JF0000000000000000000004",
          "phone_number": "+447700900502",
          "whatsapp_lid": null,
          "role": "member"
        }
      ]
    }
  },
  "qrPairing.logout": {
    "status": 200,
    "body": {
      "channel_id": "ch_01JF0000000000000000000002",
      "status": "disconnected",
      "qr_available": false,
      "qr_expires_at": null,
      "phone_number": null,
      "pairing_started_at": "2026-01-15T09:30:00.000Z",
      "pairing_code_available": false,
      "pairing_code_expires_at": null,
      "connection_error": null
    }
  },
  "channels.update": {
    "status": 200,
    "body": {
      "id": "ch_01JF0000000000000000000002",
      "object": "channel",
      "workspace_id": "ws_01JF0000000000000000000001",
      "name": "Support (Berlin)",
      "provider": "qr",
      "status": "disconnected",
      "status_reason": "logged_out",
      "is_default": false,
      "phone_number": "+15550007777",
      "call_policy": {
        "reject": false,
        "reply_text": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": null
    }
  },
  "channels.archive": {
    "status": 200,
    "body": {
      "id": "ch_01JF0000000000000000000002",
      "object": "channel",
      "workspace_id": "ws_01JF0000000000000000000001",
      "name": "Support (Berlin)",
      "provider": "qr",
      "status": "archived",
      "status_reason": "logged_out",
      "is_default": false,
      "phone_number": "+15550007777",
      "call_policy": {
        "reject": false,
        "reply_text": null
      },
      "created_at": "2026-01-15T09:30:00.000Z",
      "updated_at": "2026-01-15T09:30:00.000Z",
      "archived_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "apiKeys.revoke": {
    "status": 200,
    "body": {
      "id": "key_01JF0000000000000000000002",
      "revoked_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "sandbox.revoke": {
    "status": 200,
    "body": {
      "id": "sbx_01JF0000000000000000000001",
      "object": "sandbox_session",
      "channel_id": "ch_01JF0000000000000000000001",
      "phone_number": "+15550200000",
      "status": "revoked",
      "verified_recipients": [
        "+4915112345678"
      ],
      "expires_at": "2026-01-15T09:30:00.000Z",
      "created_at": "2026-01-15T09:30:00.000Z"
    }
  },
  "auth.register": {
    "status": 201,
    "body": {
      "user": {
        "id": "usr_01JF0000000000000000000002",
        "object": "user",
        "email": "grace@example.com",
        "name": "Grace",
        "email_verified_at": null,
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z"
      },
      "workspace": {
        "id": "ws_01JF0000000000000000000002",
        "object": "workspace",
        "name": "Grace's Bakery",
        "plan": "free",
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z",
        "updated_at": "2026-01-15T09:30:00.000Z"
      }
    }
  },
  "auth.verifyEmail": {
    "status": 200,
    "body": {
      "user": {
        "id": "usr_01JF0000000000000000000002",
        "object": "user",
        "email": "grace@example.com",
        "name": "Grace",
        "email_verified_at": "2026-01-15T09:30:00.000Z",
        "status": "active",
        "created_at": "2026-01-15T09:30:00.000Z"
      }
    }
  },
  "session.logout": {
    "status": 204
  }
}
