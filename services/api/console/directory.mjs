// Contacts and templates (docs/CONSOLE.md "Console"): search contacts by text or tag, add one, edit its
// tags, import a CSV file and read the per-row report; create a template and test-send it.
import { $, api, badge, cell, el, formError, keyFor, state, views, when } from "./lib.mjs"

const tagsOf = (text) => text.split(",").map((t) => t.trim()).filter((t) => t !== "")

// ---- contacts ------------------------------------------------------------------------------

views.set("contacts", async () => {
  const tags = await api("GET", "/v1/contact-tags")
  const select = $("contact-tag")
  const previous = select.value
  select.replaceChildren(el("option", { value: "", text: "Any tag" }),
    ...tags.data.map((t) => el("option", { value: t.tag, text: `${t.tag} (${t.contact_count})` })))
  select.value = [...select.options].some((o) => o.value === previous) ? previous : ""
  await searchContacts()
})

/** A contact's `whatsapp.status`: what a QR channel's check before its first send found. */
const WHATSAPP = { on_whatsapp: "On WhatsApp", not_on_whatsapp: "Not on WhatsApp", unknown: "Not checked" }

async function searchContacts() {
  const params = new URLSearchParams({ limit: "50" })
  const q = $("contact-q").value.trim()
  if (q) params.set("q", q)
  if ($("contact-tag").value) params.set("tag", $("contact-tag").value)
  const page = await api("GET", `/v1/contacts?${params}`)
  $("contacts").tBodies[0].replaceChildren(...page.data.map((c) => el("tr", { "data-contact": c.id },
    cell("Name", c.name ?? "—"),
    cell("Number", c.phone_number),
    cell("WhatsApp", WHATSAPP[c.whatsapp?.status] ?? "—"),
    cell("E-mail", c.email ?? "—"),
    cell("Tags", c.tags.length ? c.tags.join(", ") : "—"),
    cell("Actions", el("button", { type: "button", onclick: () => editTags(c), text: `Edit tags of ${c.name ?? c.phone_number}` })))))
  if (page.data.length === 0) $("contacts").tBodies[0].append(el("tr", {}, el("td", { colspan: "6", text: "No contacts match." })))
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
    const name = $("contact-name").value.trim()
    await api("POST", "/v1/contacts", {
      phone_number: $("contact-phone").value.trim(),
      ...(name ? { name } : {}),
      tags: tagsOf($("contact-tags").value)
    })
    for (const id of ["contact-phone", "contact-name", "contact-tags"]) $(id).value = ""
    await views.get("contacts")()
  } catch (err) {
    formError("contact-error", err)
  }
})

async function editTags(c) {
  const text = window.prompt(`Tags of ${c.name ?? c.phone_number}, separated by commas`, c.tags.join(", "))
  if (text === null) return
  try {
    await api("PATCH", `/v1/contacts/${c.id}`, { tags: tagsOf(text) })
    await views.get("contacts")()
  } catch (err) {
    formError("contacts-error", err)
  }
}

/** The file as base64, as `POST /v1/contacts/imports` takes it. */
const base64Of = (file) =>
  new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })

$("import-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("import-error", null)
  const file = $("import-file").files[0]
  if (!file) return
  try {
    const country = $("import-country").value.trim().toUpperCase()
    let job = await api("POST", "/v1/contacts/imports", {
      file: await base64Of(file),
      ...(country ? { default_country: country } : {}),
      tags: tagsOf($("import-tags").value)
    })
    showImport(job)
    while (job.status === "queued" || job.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 1000))
      if (state.view !== "contacts") return
      job = await api("GET", `/v1/contacts/imports/${job.id}`)
      showImport(job)
    }
    await views.get("contacts")()
  } catch (err) {
    formError("import-error", err)
  }
})

/** The import's counts and its per-row report (row, line, column, why; never a cell's value). */
function showImport(job) {
  const report = $("import-report")
  report.hidden = false
  $("import-summary").replaceChildren(badge(job.status),
    ` ${job.processed_rows} of ${job.total_rows} rows: ${job.created} created, ${job.updated} updated, ${job.skipped} skipped, ${job.failed} failed`)
  $("import-errors").tBodies[0].replaceChildren(...job.errors.map((e) => el("tr", {},
    cell("Row", String(e.row)), cell("Line", String(e.line)), cell("Column", e.column ?? "—"),
    cell("Code", e.code), cell("Why", e.message))))
  $("import-errors").hidden = job.errors.length === 0
}

// ---- templates -----------------------------------------------------------------------------

const templates = { testing: null }

views.set("templates", async () => {
  const [page, channels] = await Promise.all([api("GET", "/v1/templates?limit=100"), api("GET", "/v1/channels?limit=100")])
  state.channels = channels.data.filter((c) => c.status !== "archived")
  $("templates").tBodies[0].replaceChildren(...page.data.map((t) => el("tr", { "data-template": t.id },
    cell("Name", el("strong", { text: t.name }), el("div", { class: "muted", text: t.slug })),
    cell("Category", t.category),
    cell("Status", badge(t.status)),
    cell("Body", el("span", { class: "template-body", text: t.body })),
    cell("Actions", t.status === "archived" ? "" : el("button", { type: "button", onclick: () => startTestSend(t), text: `Test-send ${t.name}` })))))
  if (page.data.length === 0) $("templates").tBodies[0].append(el("tr", {}, el("td", { colspan: "5", text: "No templates yet." })))
  const sendable = state.channels.filter((c) => c.status === "connected")
  $("test-channel").replaceChildren(...sendable.map((c) => el("option", { value: c.id, text: `${c.name} (${c.provider})` })))
})

$("template-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("template-error", null)
  try {
    await api("POST", "/v1/templates", {
      slug: $("template-slug").value.trim(),
      name: $("template-name").value.trim(),
      category: $("template-category").value,
      body: $("template-body").value
    })
    for (const id of ["template-slug", "template-name", "template-body"]) $(id).value = ""
    await views.get("templates")()
  } catch (err) {
    formError("template-error", err)
  }
})

function startTestSend(t) {
  templates.testing = t
  $("test-send").hidden = false
  $("test-send-title").textContent = `Test-send ${t.name}`
  $("test-variables").replaceChildren(...t.variables.map((v) => el("div", { class: "field" },
    el("label", { for: `test-var-${v.name}`, text: `Value of {{${v.name}}}${v.required ? "" : " (optional)"}` }),
    el("input", { id: `test-var-${v.name}`, "data-variable": v.name, placeholder: v.example ?? "" }))))
  $("test-result").textContent = ""
  $("test-to").focus()
}

$("test-send-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  formError("test-error", null)
  const t = templates.testing
  const variables = {}
  for (const input of $("test-variables").querySelectorAll("input")) {
    if (input.value !== "") variables[input.dataset.variable] = input.value
  }
  const channel = $("test-channel").value
  try {
    const sent = await api("POST", `/v1/templates/${t.id}/test-send`, {
      to: $("test-to").value.trim(),
      ...(channel ? { channel_id: channel } : {}),
      variables
    }, channel ? await keyFor(channel) : {})
    $("test-result").textContent = `Sent ${sent.id} at ${when(sent.created_at)}: “${sent.text?.body ?? ""}”`
  } catch (err) {
    formError("test-error", err)
  }
})
