/**
 * A static page drawing dashboard panels from Prometheus `query_range` results (one SVG line chart
 * per panel), for the picture of the dashboard in docs/OPERATING.md. No script, no network.
 */

export interface PanelData {
  readonly title: string
  readonly type: string
  readonly series: ReadonlyArray<{ readonly label: string; readonly points: ReadonlyArray<readonly [number, string]> }>
}

const COLOURS = ["#73bf69", "#f2cc0c", "#5794f2", "#ff780a", "#b877d9", "#f2495c", "#8ab8ff", "#ffb357"]
const WIDTH = 360
const HEIGHT = 150

const escape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" })[c]!)

const finite = (value: string) => {
  const n = Number(value)
  return Number.isFinite(n) ? n : undefined
}

/** A number as Grafana's panels show it: 3 significant digits. */
const short = (n: number) =>
  Math.abs(n) >= 1000 ? `${Number((n / 1000).toPrecision(3))}k` : String(Number(n.toPrecision(3)))

/** One panel over the window `t0`..`t1` (seconds) shared by every panel. */
const chart = (panel: PanelData, t0: number, t1: number) => {
  const values = panel.series.flatMap((s) => s.points.flatMap(([, v]) => finite(v) ?? []))
  const top = Math.max(...values, 0) * 1.1 || 1
  const x = (t: number) => (t1 === t0 ? 0 : ((t - t0) / (t1 - t0)) * WIDTH)
  const y = (v: number) => HEIGHT - (v / top) * HEIGHT
  const lines = panel.series.slice(0, COLOURS.length).map((s, i) => {
    const path = s.points.flatMap(([t, v]) => {
      const n = finite(v)
      return n === undefined ? [] : [`${x(t).toFixed(1)},${y(n).toFixed(1)}`]
    })
    return `<polyline fill="none" stroke="${COLOURS[i]}" stroke-width="1.5" points="${path.join(" ")}"/>`
  })
  const legend = panel.series.slice(0, COLOURS.length).map((s, i) => {
    const last = [...s.points].reverse().map(([, v]) => finite(v)).find((n) => n !== undefined)
    return `<span><i style="background:${COLOURS[i]}"></i>${escape(s.label)} ${
      last === undefined ? "" : short(last)
    }</span>`
  })
  return `<section><h2>${escape(panel.title)}</h2>
<svg viewBox="0 -4 ${WIDTH} ${HEIGHT + 8}" width="${WIDTH}" height="${HEIGHT}">
<line x1="0" y1="${HEIGHT}" x2="${WIDTH}" y2="${HEIGHT}" stroke="#444"/>
<text x="2" y="10">${short(top)}</text>
<text x="${WIDTH - 2}" y="${HEIGHT - 3}" text-anchor="end">last ${Math.round(t1 - t0)} s</text>${lines.join("")}</svg>
<div class="legend">${legend.join("")}</div></section>`
}

/** The page: the panels named in `titles`, in that order, three a row. */
export const dashboardPage = (panels: ReadonlyArray<PanelData>, titles: ReadonlyArray<string>) => {
  const times = panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([t]) => t)))
  const [t0, t1] = [Math.min(...times), Math.max(...times)]
  const shown = titles.map((title) => {
    const panel = panels.find((p) => p.title === title)
    if (panel === undefined) throw new Error(`no panel "${title}" in the dashboard`)
    return chart(panel, t0, t1)
  })
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; padding: 12px; background: #111217; color: #ccccdc; font: 12px sans-serif; }
h1 { font-size: 15px; margin: 0 0 10px; }
main { display: grid; grid-template-columns: repeat(3, 380px); gap: 10px; }
section { background: #181b1f; border: 1px solid #2c3235; padding: 8px; }
h2 { font-size: 13px; margin: 0 0 6px; }
svg text { fill: #8e8e8e; font-size: 10px; }
.legend span { margin-right: 10px; white-space: nowrap; display: inline-block; }
.legend i { display: inline-block; width: 10px; height: 3px; margin: 0 4px 3px 0; }
</style></head><body><h1>Switchboard (deploy/grafana/switchboard.json), evaluated by Prometheus</h1>
<main>${shown.join("\n")}</main></body></html>`
}
