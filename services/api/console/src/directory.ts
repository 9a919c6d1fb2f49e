/**
 * Contacts and templates (docs/CONSOLE.md "Console"): search contacts by text or tag, add one,
 * edit its tags, import a CSV file and read the per-row report; create a template and test-send it.
 */
import { MessageCategory } from "@switchboard/domain"
import { Schema } from "effect"
import type { Answer, Request } from "./lib.js"
import { $, api, badge, callerFor, cell, el, formError, state, views, when } from "./lib.js"

const tagsOf = (text: string) => text.split(",").map((t) => t.trim()).filter((t) => t !== "")
const value = (id: string) => $<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(id).value

// ---- contacts ------------------------------------------------------------------------------

type Contact = Answer<"contacts", "get">

views.set("contacts", async () => {
  const tags = await api.contacts.tags({ urlParams: {} })
  const select = $<HTMLSelectElement>("contact-tag")
  const previous = select.value
  select.replaceChildren(
    el("option", { value: "", text: "Any tag" }),
    ...tags.data.map((t) => el("option", { value: t.tag, text: `${t.tag} (${t.contact_count})` }))
  )
  select.value = [...select.options].some((o) => o.value === previous) ? previous : ""
  await searchContacts()
})

/** A contact's `whatsapp.status`: what a QR channel's check before its first send found. */
const WHATSAPP: Record<string, string> = {
  on_whatsapp: "On WhatsApp",
  not_on_whatsapp: "Not on WhatsApp",
  unknown: "Not checked"
}

async function searchContacts() {
  const q = value("contact-q").trim()
  const tag = value("contact-tag")
  const page = await api.contacts.list({ urlParams: { limit: 50, ...(q ? { q } : {}), ...(tag ? { tag } : {}) } })
  $<HTMLTableElement>("contacts").tBodies[0]!.replaceChildren(...page.data.map((c) =>
    el(
      "tr",
      { "data-contact": c.id },
      cell("Name", c.name ?? "—"),
      cell("Number", c.phone_number ?? "—"),
      cell("WhatsApp", WHATSAPP[c.whatsapp?.status ?? ""] ?? "—"),
      cell("E-mail", c.email ?? "—"),
      cell("Tags", c.tags.length ? c.tags.join(", ") : "—"),
      cell(
        "Actions",
        el("button", { type: "button", onclick: () => editTags(c), text: `Edit tags of ${c.name ?? c.phone_number}` })
      )
    )
  ))
  if (page.data.length === 0) {
    $<HTMLTableElement>("contacts").tBodies[0]!.append(
      el("tr", {}, el("td", { colspan: "6", text: "No contacts match." }))
    )
  }
  $("contacts-count").textContent = `${page.data.length}${page.page.has_more ? "+" : ""} shown`
}

$("contact-search").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("contacts-error", null)
  await searchContacts().catch((err) => formError("contacts-error", err))
})

$("contact-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("contact-error", null)
  try {
    const name = value("contact-name").trim()
    await api.contacts.create({
      payload: {
        phone_number: value("contact-phone").trim(),
        ...(name ? { name } : {}),
        tags: tagsOf(value("contact-tags"))
      }
    })
    for (const id of ["contact-phone", "contact-name", "contact-tags"]) $<HTMLInputElement>(id).value = ""
    await views.get("contacts")!()
  } catch (err) {
    formError("contact-error", err)
  }
})

async function editTags(c: Contact) {
  const text = window.prompt(`Tags of ${c.name ?? c.phone_number}, separated by commas`, c.tags.join(", "))
  if (text === null) return
  try {
    await api.contacts.update({ path: { contactId: c.id }, payload: { tags: tagsOf(text) } })
    await views.get("contacts")!()
  } catch (err) {
    formError("contacts-error", err)
  }
}

/** The file as base64, as `POST /v1/contacts/imports` takes it. */
const base64Of = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })

$("import-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("import-error", null)
  const file = $<HTMLInputElement>("import-file").files?.[0]
  if (!file) return
  try {
    const country = value("import-country").trim().toUpperCase()
    let job = await api.contactImports.create({
      payload: {
        file: await base64Of(file),
        ...(country ? { default_country: country } : {}),
        tags: tagsOf(value("import-tags"))
      },
      headers: {}
    })
    showImport(job)
    while (job.status === "queued" || job.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      if (state.view !== "contacts") return
      job = await api.contactImports.get({ path: { importId: job.id } })
      showImport(job)
    }
    await views.get("contacts")!()
  } catch (err) {
    formError("import-error", err)
  }
})

/** The import's counts and its per-row report (row, line, column, why; never a cell's value). */
function showImport(job: Answer<"contactImports", "get">) {
  $("import-report").hidden = false
  $("import-summary").replaceChildren(
    badge(job.status),
    ` ${job.processed_rows} of ${job.total_rows} rows: ${job.created} created, ${job.updated} updated, ${job.skipped} skipped, ${job.failed} failed`
  )
  $<HTMLTableElement>("import-errors").tBodies[0]!.replaceChildren(...job.errors.map((e) =>
    el(
      "tr",
      {},
      cell("Row", String(e.row)),
      cell("Line", String(e.line)),
      cell("Column", e.column ?? "—"),
      cell("Code", e.code),
      cell("Why", e.message)
    )
  ))
  $("import-errors").hidden = job.errors.length === 0
}

// ---- templates -----------------------------------------------------------------------------

type Template = Answer<"templates", "get">
const templates: { testing: Template | null } = { testing: null }
const isCategory = Schema.is(MessageCategory.Category)

views.set("templates", async () => {
  const [page, channels] = await Promise.all([
    api.templates.list({ urlParams: { limit: 100 } }),
    api.channels.list({ urlParams: { limit: 100 } })
  ])
  state.channels = channels.data.filter((c) => c.status !== "archived")
  $<HTMLTableElement>("templates").tBodies[0]!.replaceChildren(...page.data.map((t) =>
    el(
      "tr",
      { "data-template": t.id },
      cell("Name", el("strong", { text: t.name }), el("div", { class: "muted", text: t.slug })),
      cell("Category", t.category),
      cell("Status", badge(t.status)),
      cell("Body", el("span", { class: "template-body", text: t.body })),
      cell(
        "Actions",
        t.status === "archived"
          ? ""
          : el("button", { type: "button", onclick: () => startTestSend(t), text: `Test-send ${t.name}` })
      )
    )
  ))
  if (page.data.length === 0) {
    $<HTMLTableElement>("templates").tBodies[0]!.append(
      el("tr", {}, el("td", { colspan: "5", text: "No templates yet." }))
    )
  }
  const sendable = state.channels.filter((c) => c.status === "connected")
  $("test-channel").replaceChildren(
    ...sendable.map((c) => el("option", { value: c.id, text: `${c.name} (${c.provider})` }))
  )
})

$("template-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("template-error", null)
  try {
    const category = value("template-category")
    // the form's choices are the contract's categories
    if (!isCategory(category)) throw new Error(`not a category: ${category}`)
    await api.templates.create({
      payload: {
        slug: value("template-slug").trim(),
        name: value("template-name").trim(),
        category,
        body: value("template-body")
      }
    })
    for (const id of ["template-slug", "template-name", "template-body"]) $<HTMLInputElement>(id).value = ""
    await views.get("templates")!()
  } catch (err) {
    formError("template-error", err)
  }
})

function startTestSend(t: Template) {
  templates.testing = t
  $("test-send").hidden = false
  $("test-send-title").textContent = `Test-send ${t.name}`
  $("test-variables").replaceChildren(...t.variables.map((v) =>
    el(
      "div",
      { class: "field" },
      el("label", { for: `test-var-${v.name}`, text: `Value of {{${v.name}}}${v.required ? "" : " (optional)"}` }),
      el("input", { id: `test-var-${v.name}`, "data-variable": v.name, placeholder: v.example ?? "" })
    )
  ))
  $("test-result").textContent = ""
  $("test-to").focus()
}

$("test-send-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("test-error", null)
  const t = templates.testing
  if (!t) return
  const variables: Record<string, string> = {}
  for (const input of $("test-variables").querySelectorAll("input")) {
    if (input.value !== "" && input.dataset.variable) variables[input.dataset.variable] = input.value
  }
  const channel = state.channels.find((c) => c.id === value("test-channel"))
  try {
    const request: Request<"templates", "testSend"> = {
      path: { templateId: t.id },
      payload: { to: value("test-to").trim(), ...(channel ? { channel_id: channel.id } : {}), variables },
      headers: {}
    }
    const { client } = channel ? await callerFor(channel.id) : { client: api }
    const sent = await client.templates.testSend(request)
    $("test-result").textContent = `Sent ${sent.id} at ${when(sent.created_at)}: “${sent.text?.body ?? ""}”`
  } catch (err) {
    formError("test-error", err)
  }
})
