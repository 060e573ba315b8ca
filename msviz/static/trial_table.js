// msviz trials table: a page of rows from Python; sort, filter, page and select send traits back.
function fmt(col, v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number" && !Number.isInteger(v)) return v.toPrecision(5);
  return String(v);
}

function render({ model, el }) {
  el.classList.add("msviz-trial-table");
  const bar = document.createElement("div");
  bar.className = "msviz-tt-bar";
  const table = document.createElement("table");
  table.className = "msviz-tt";
  const pager = document.createElement("div");
  pager.className = "msviz-tt-pager";
  el.append(bar, table, pager);

  function setTrait(name, value) {
    model.set(name, value);
    model.save_changes();
  }

  function drawBar() {
    bar.replaceChildren();
    const options = model.get("options") || {};
    const filters = model.get("filters") || {};
    for (const [col, values] of Object.entries(options)) {
      const label = document.createElement("label");
      label.textContent = col + " ";
      const sel = document.createElement("select");
      sel.className = "msviz-tt-filter";
      sel.dataset.column = col;
      const all = document.createElement("option");
      all.value = "";
      all.textContent = "all";
      sel.append(all);
      for (const v of values) {
        const o = document.createElement("option");
        o.value = JSON.stringify(v);
        o.textContent = String(v);
        if (filters[col] !== undefined && filters[col] !== null && JSON.stringify(filters[col]) === o.value) o.selected = true;
        sel.append(o);
      }
      sel.addEventListener("change", () => {
        const next = { ...(model.get("filters") || {}) };
        if (sel.value === "") delete next[col];
        else next[col] = JSON.parse(sel.value);
        model.set("page", 0);
        setTrait("filters", next);
      });
      label.append(sel);
      bar.append(label);
    }
  }

  function drawTable() {
    const columns = model.get("columns") || [];
    const rows = model.get("rows") || [];
    const sortBy = model.get("sort_by");
    const asc = model.get("ascending");
    const selected = model.get("selected");
    const head = document.createElement("thead");
    const hr = document.createElement("tr");
    for (const col of columns) {
      const th = document.createElement("th");
      th.textContent = col + (col === sortBy ? (asc ? " \u25B2" : " \u25BC") : "");
      th.dataset.column = col;
      th.addEventListener("click", () => {
        if (col === model.get("sort_by")) model.set("ascending", !model.get("ascending"));
        else { model.set("ascending", true); model.set("sort_by", col); }
        model.save_changes();
      });
      hr.append(th);
    }
    head.append(hr);
    const body = document.createElement("tbody");
    for (const row of rows) {
      const tr = document.createElement("tr");
      tr.dataset.trial = row.trial;
      if (row.status && row.status !== "ok") tr.classList.add("msviz-failed");
      if (row.status === "wrong_result") tr.classList.add("msviz-wrong");
      if (row.trial === selected) tr.classList.add("msviz-selected");
      for (const col of columns) {
        const td = document.createElement("td");
        const text = fmt(col, row[col]);
        if (col === "error" && text) {
          td.textContent = text.split("\n").find((l) => l.trim()) || text;
          td.title = text;
        } else td.textContent = text;
        tr.append(td);
      }
      tr.addEventListener("click", () => setTrait("selected", row.trial));
      body.append(tr);
    }
    table.replaceChildren(head, body);
  }

  function drawPager() {
    pager.replaceChildren();
    const page = model.get("page"), pages = model.get("pages"), total = model.get("total");
    const prev = document.createElement("button");
    prev.textContent = "\u2039 prev";
    prev.disabled = page <= 0;
    prev.addEventListener("click", () => setTrait("page", page - 1));
    const next = document.createElement("button");
    next.textContent = "next \u203A";
    next.disabled = page >= pages - 1;
    next.addEventListener("click", () => setTrait("page", page + 1));
    const info = document.createElement("span");
    info.className = "msviz-tt-info";
    info.textContent = ` page ${page + 1} of ${pages} \u00B7 ${total} trials `;
    pager.append(prev, info, next);
  }

  const redraw = () => { drawBar(); drawTable(); drawPager(); };
  redraw();
  const events = ["change:rows", "change:options", "change:selected", "change:page", "change:pages",
                  "change:total", "change:sort_by", "change:ascending", "change:filters"];
  for (const e of events) model.on(e, redraw);
  return () => { for (const e of events) model.off(e, redraw); };
}

export default { render };
