// The sandbox's Slack client: renders the workspace the sandbox serves and sends what a
// person does back to it. No build step, no framework: plain DOM.
"use strict";

const EMOJI = {
  white_check_mark: "✅", heavy_check_mark: "✔️", x: "❌", warning: "⚠️", star: "⭐",
  hourglass: "⌛", hourglass_flowing_sand: "⏳", raising_hand: "🙋", tada: "🎉", eyes: "👀",
  "+1": "👍", thumbsup: "👍", "-1": "👎", memo: "📝", robot_face: "🤖", no_entry_sign: "🚫",
  moneybag: "💰", bar_chart: "📊", page_facing_up: "📄", wave: "👋", rocket: "🚀",
  heart: "❤️", pray: "🙏", white_circle: "⚪", point_right: "👉", inbox_tray: "📥",
};
const REACTION_CHOICES = ["white_check_mark", "eyes", "+1"];

const app = {
  me: localStorage.getItem("closebot-sandbox-user") || "UALICE",
  channel: "CFINANCE",
  thread: null,
  state: null,
  drafts: JSON.parse(sessionStorage.getItem("closebot-sandbox-drafts") || "{}"),
  rendered: new Map(),
  used: new Set(),
  fetching: false,
  again: false,
  awaitingClose: null,  // when /close was sent: its thread opens by itself
  seenRoots: new Set(),
  opened: {},  // a collapsible container the reader opened or closed (message ts|block) → open
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "html") node.innerHTML = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function unescapeSlack(text) {
  return String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

// -- time -------------------------------------------------------------------

function tsDate(ts) { return new Date(parseFloat(ts) * 1000); }
function clock(date) { return date.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" }); }
function dayLabel(date) {
  const today = new Date();
  const yesterday = new Date(Date.now() - 864e5);
  if (date.toDateString() === today.toDateString()) return "Today";
  if (date.toDateString() === yesterday.toDateString()) return "Yesterday";
  return date.toLocaleDateString([], { weekday: "long", month: "long", day: "numeric" });
}
function slackDate(seconds, format, fallback) {
  const date = new Date(seconds * 1000);
  if (isNaN(date)) return fallback;
  return format
    .replace("{date_short_pretty}", dayLabel(date) === "Today" || dayLabel(date) === "Yesterday" ? dayLabel(date) : date.toLocaleDateString([], { month: "short", day: "numeric" }))
    .replace("{date_pretty}", dayLabel(date))
    .replace("{date_short}", date.toLocaleDateString([], { month: "short", day: "numeric", year: "numeric" }))
    .replace("{date}", date.toLocaleDateString([], { month: "long", day: "numeric", year: "numeric" }))
    .replace("{date_num}", date.toISOString().slice(0, 10))
    .replace("{time}", clock(date));
}

// -- people -----------------------------------------------------------------

function person(id) {
  const people = (app.state && app.state.people) || {};
  if (id === "USLACKBOT") return { name: "Slackbot", color: "#611f69", title: "" };
  return people[id] || { name: id || "someone", color: "#868686", title: "" };
}
function initials(name) { return name.split(/\s+/).map((w) => w[0] || "").join("").slice(0, 2).toUpperCase(); }
function avatar(id, size) {
  const cls = `avatar ${size || ""}`;
  if (id === app.state.bot) return el("span", { class: `${cls} bot-avatar`, "aria-hidden": "true" }, "🧾");
  if (id === "USLACKBOT") return el("span", { class: `${cls} slackbot-avatar`, "aria-hidden": "true" });
  const p = person(id);
  return el("span", { class: cls, style: `background:${p.color}`, "aria-hidden": "true" }, initials(p.name));
}

// -- mrkdwn -----------------------------------------------------------------

function emoji(name) { return EMOJI[name] || `:${name}:`; }

function renderToken(token) {
  const [target, label] = token.split("|", 2);
  if (target.startsWith("@")) {
    const id = target.slice(1);
    return `<span class="mention${id === app.me ? " me" : ""}">@${escapeHtml(person(id).name)}</span>`;
  }
  if (target.startsWith("#")) {
    const channel = (app.state.channels || []).find((c) => c.id === target.slice(1));
    return `<span class="mention">#${escapeHtml(label || (channel && channel.name) || target.slice(1))}</span>`;
  }
  if (target.startsWith("!date^")) {
    const [, seconds, format] = target.split("^");
    return escapeHtml(slackDate(Number(seconds), format || "{date}", label || ""));
  }
  if (target.startsWith("!")) return `<span class="mention">@${escapeHtml(label || target.slice(1))}</span>`;
  if (target.startsWith(`${location.origin}/#/`)) {  // a permalink into this workspace
    return `<a href="${escapeHtml(target.slice(location.origin.length + 1))}" class="permalink">${escapeHtml(label || target)}</a>`;
  }
  if (/^(https?|mailto):/.test(target)) {
    return `<a href="${escapeHtml(target)}" target="_blank" rel="noopener">${escapeHtml(label || target)}</a>`;
  }
  return escapeHtml(`<${token}>`);
}

function inline(text) {
  // Slack text escapes &, < and >; anything between < and > is a mention, date or link.
  const tokens = [];
  let out = "";
  const parts = String(text).split(/(<[^<>\n]+>)/);
  for (const part of parts) {
    if (/^<[^<>\n]+>$/.test(part)) {
      tokens.push(renderToken(unescapeSlack(part.slice(1, -1))));
      out += `\u0000${tokens.length - 1}\u0000`;
    } else {
      out += escapeHtml(unescapeSlack(part));
    }
  }
  const codes = [];
  out = out.replace(/`([^`\n]+)`/g, (_, code) => { codes.push(code); return `\u0001${codes.length - 1}\u0001`; });
  out = out
    .replace(/(^|[\s(>\u0000"'])\*(?!\s)([^*\n]+?)\*(?=$|[\s).,!?:;'"\u0000])/gm, "$1<b>$2</b>")
    .replace(/(^|[\s(>\u0000"'])_(?!\s)([^_\n]+?)_(?=$|[\s).,!?:;'"\u0000])/gm, "$1<i>$2</i>")
    .replace(/(^|[\s(>\u0000"'])~(?!\s)([^~\n]+?)~(?=$|[\s).,!?:;'"\u0000])/gm, "$1<s>$2</s>")
    .replace(/:([a-z0-9_+\-]+):/g, (m, name) => (EMOJI[name] ? EMOJI[name] : m));
  out = out.replace(/\u0001(\d+)\u0001/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
  return out.replace(/\u0000(\d+)\u0000/g, (_, i) => tokens[Number(i)]);
}

function mrkdwn(text) {
  const pieces = String(text || "").split("```");
  let html = "";
  pieces.forEach((piece, i) => {
    if (i % 2 === 1) { html += `<pre>${escapeHtml(unescapeSlack(piece.replace(/^\n/, "")))}</pre>`; return; }
    const lines = piece.split("\n");
    let quote = [];
    const flush = () => { if (quote.length) { html += `<blockquote>${quote.map(inline).join("<br>")}</blockquote>`; quote = []; } };
    lines.forEach((line, n) => {
      if (line.startsWith("&gt; ") || line.startsWith("> ")) { quote.push(line.replace(/^(&gt;|>) /, "")); return; }
      flush();
      html += inline(line) + (n < lines.length - 1 ? "\n" : "");
    });
    flush();
  });
  return html;
}

function textObject(obj, cls) {
  if (!obj) return null;
  if (obj.type === "mrkdwn") return el("div", { class: `mrkdwn ${cls || ""}`, html: mrkdwn(obj.text) });
  return el("div", { class: `plain ${cls || ""}`, html: escapeHtml(obj.text).replace(/:([a-z0-9_+\-]+):/g, (m, n) => EMOJI[n] || m) });
}
function plainText(obj) { return obj ? String(obj.text).replace(/:([a-z0-9_+\-]+):/g, (m, n) => EMOJI[n] || m) : ""; }

// -- rich text --------------------------------------------------------------

function richInline(elements) {
  return (elements || []).map((e) => {
    let node;
    if (e.type === "text") {
      node = document.createTextNode(e.text);
      const style = e.style || {};
      if (style.code) node = el("code", {}, node);
      if (style.bold) node = el("b", {}, node);
      if (style.italic) node = el("i", {}, node);
      if (style.strike) node = el("s", {}, node);
      return node;
    }
    if (e.type === "link") return el("a", { href: e.url, target: "_blank", rel: "noopener" }, e.text || e.url);
    if (e.type === "user") return el("span", { class: `mention${e.user_id === app.me ? " me" : ""}` }, "@" + person(e.user_id).name);
    if (e.type === "channel") return el("span", { class: "mention" }, "#" + e.channel_id);
    if (e.type === "emoji") return document.createTextNode(e.unicode ? String.fromCodePoint(...e.unicode.split("-").map((h) => parseInt(h, 16))) : emoji(e.name));
    if (e.type === "broadcast") return el("span", { class: "mention" }, "@" + e.range);
    return document.createTextNode("");
  });
}

function richText(block) {
  return el("div", { class: "rt mrkdwn" }, (block.elements || []).map((part) => {
    if (part.type === "rich_text_section") return el("div", {}, richInline(part.elements));
    if (part.type === "rich_text_preformatted") return el("pre", {}, richInline(part.elements));
    if (part.type === "rich_text_quote") return el("blockquote", {}, richInline(part.elements));
    if (part.type === "rich_text_list") {
      const tag = part.style === "ordered" ? "ol" : "ul";
      return el(tag, { style: `margin-left:${(part.indent || 0) * 20}px` }, (part.elements || []).map((s) => el("li", {}, richInline(s.elements))));
    }
    return null;
  }));
}

// -- Block Kit ---------------------------------------------------------------

function draftKey(message, blockId) { return `${message.ts}|${blockId}`; }
function getDraft(message, blockId) { return app.drafts[draftKey(message, blockId)]; }
function setDraft(message, blockId, value) {
  const key = draftKey(message, blockId);
  if (value === null || value === undefined || (Array.isArray(value) && !value.length) || value === "") delete app.drafts[key];
  else app.drafts[key] = value;
  sessionStorage.setItem("closebot-sandbox-drafts", JSON.stringify(app.drafts));
}

function renderBlocks(message) {
  return el("div", { class: "blocks" }, (message.blocks || []).map((block) => renderBlock(block, message)));
}

function renderBlock(block, message) {
  const wrap = (node) => el("div", { class: `block block-${block.type}`, "data-block-id": block.block_id || null }, node);
  switch (block.type) {
    case "header": return wrap(el("div", { class: "header-block" }, plainText(block.text)));
    case "divider": return wrap(el("hr", { class: "divider" }));
    case "context":
      return wrap(el("div", { class: "context" }, (block.elements || []).map((e) =>
        e.type === "image" ? el("img", { src: e.image_url, alt: e.alt_text || "" }) : textObject(e))));
    case "image":
      return wrap(el("div", { class: "image-block" }, block.title ? el("div", { class: "file-sub" }, plainText(block.title)) : null, el("img", { src: block.image_url, alt: block.alt_text || "" })));
    case "rich_text": return wrap(richText(block));
    case "section": {
      const main = el("div", { class: "section-main" },
        textObject(block.text),
        block.fields ? el("div", { class: "fields" }, block.fields.map((f) => textObject(f))) : null);
      const accessory = block.accessory ? renderElement(block.accessory, block, message, "accessory") : null;
      return wrap(el("div", { class: "section" }, main, accessory));
    }
    case "actions":
      return wrap(el("div", { class: "actions" }, (block.elements || []).map((e) => renderElement(e, block, message, "actions"))));
    case "input": {
      const label = el("div", { class: "input-label" }, plainText(block.label), block.optional ? el("span", { class: "optional" }, " (optional)") : null);
      return wrap(el("div", { class: "input-block", role: "group", "aria-label": plainText(block.label) },
        label, renderElement(block.element, block, message, "input"),
        block.hint ? el("div", { class: "hint" }, plainText(block.hint)) : null));
    }
    case "table": return wrap(renderTable(block));
    case "plan": return wrap(el("div", { class: "stream stream-plan" }, renderPlanBlock(block)));
    case "container": return wrap(renderContainer(block, message));
    default:
      return wrap(el("div", { class: "context" }, `(a ${block.type} block)`));
  }
}

// Slack's container block: a title (and subtitle) over its child blocks; a collapsible one
// folds to its title, opened and closed by a click on it, and stays as the reader left it
// while the thread updates (docs.slack.dev/reference/block-kit/blocks/container-block).
function renderContainer(block, message) {
  const title = block.rich_text_title ? richText(block.rich_text_title) : plainText(block.title);
  const head = [el("span", { class: "container-title" }, title),
    block.subtitle ? el("span", { class: "container-sub" }, textObject(block.subtitle)) : null];
  const children = (block.child_blocks || []).map((b) => renderBlock(b, message));
  if (!block.is_collapsible) {
    return el("div", { class: "bk-container" }, el("div", { class: "container-head" }, head), children);
  }
  const key = `${message.ts}|${block.block_id || JSON.stringify(block.title)}`;
  const open = key in app.opened ? app.opened[key] : !block.default_collapsed;
  return el("details", {
    class: "bk-container", open,
    ontoggle: (event) => { app.opened[key] = event.target.open; },
  }, el("summary", { class: "container-head" }, head), children);
}

// Slack's table block: rows of raw_text / rich_text cells, the first row a header.
function renderTable(block) {
  const settings = block.column_settings || [];
  const classes = (i) => [
    settings[i] && settings[i].align ? `align-${settings[i].align}` : "",
    settings[i] && settings[i].is_wrapped ? "wrapped" : "",
  ].filter(Boolean).join(" ") || null;
  const cell = (c, i, tag) => el(tag, { class: classes(i) },
    c.type === "rich_text" ? richText(c) : (c.text || ""));
  const rows = block.rows || [];
  return el("div", { class: "table-wrap" }, el("table", { class: "bk-table" },
    rows.length ? el("thead", {}, el("tr", {}, rows[0].map((c, i) => cell(c, i, "th")))) : null,
    el("tbody", {}, rows.slice(1).map((r) => el("tr", {}, r.map((c, i) => cell(c, i, "td")))))));
}

// One task of a plan: its state's icon, its title, its one-line result and the model's line.
function taskItem(id, title, status, output, details) {
  return el("li", { class: `task task-${status}`, "data-task": id },
    el("span", { class: "task-icon", "aria-label": status }, TASK_ICONS[status] || "○"),
    el("span", { class: "task-body" },
      el("span", { class: "task-title" }, title),
      output ? el("span", { class: "task-output" }, output) : null,
      details ? el("span", { class: "task-output" }, details) : null));
}

// A plan on one card: its title, how many tasks are complete, each task.
function planCard(title, tasks, items) {
  const done = (tasks || []).filter((t) => t.status === "complete").length;
  return el("div", { class: "plan", role: "group", "aria-label": "Plan" },
    el("div", { class: "plan-title" }, title || "Plan",
      el("span", { class: "plan-count" }, `${done} of ${items.length}`)),
    el("ol", { class: "tasks" }, items));
}

// A plan block (Block Kit: a plan of task_card blocks), drawn as a streamed plan is.
function renderPlanBlock(block) {
  const text = (rt) => (rt ? richText(rt).textContent : null);
  const tasks = block.tasks || [];
  return planCard(block.title, tasks,
    tasks.map((t) => taskItem(t.task_id, t.title, t.status || "pending", text(t.output), text(t.details))));
}

// A streamed message (chat.startStream): its markdown and, in plan mode, every task on one
// card with its state and one-line result, as Slack draws a plan. While it streams, Slack's
// Stop (a person stops the app's work: the bot hears agent_session_stopped). One Slack ended
// (its ~5-minute lifetime) is a broken placeholder until the app mends it with chat.update.
const TASK_ICONS = { pending: "○", in_progress: "◐", complete: "✓", error: "✕" };
function renderStream(message) {
  const stream = message.stream;
  if (stream.state === "expired") {
    return el("div", { class: "stream stream-expired", role: "status" },
      el("span", { class: "broken-pill" }, "⚠ Something went wrong"));
  }
  const tasks = (stream.tasks || []).map((t) => taskItem(t.id, t.title, t.status, t.output, t.details));
  const streaming = stream.state === "streaming";
  return el("div", { class: `stream stream-${stream.mode} stream-${stream.state}` },
    stream.mode === "plan" && tasks.length ? planCard(stream.title, stream.tasks, tasks) : el("ol", { class: "tasks" }, tasks),
    stream.text ? el("div", { class: "mrkdwn", html: mrkdwn(stream.text) }) : null,
    streaming ? el("span", { class: "streaming-dot", title: "streaming" }, "●") : null,
    streaming ? el("button", {
      type: "button", class: "stream-stop", title: "Stop the app's work in this thread",
      onclick: async () => {
        const reply = await post("/sandbox/stop", { user: app.me, channel: message.channel, ts: message.ts });
        if (!reply.ok) toast(reply.error || "That did not work");
      },
    }, "■ Stop") : null,
    stream.state === "stopped_by_user"
      ? el("div", { class: "stream-note" }, `Stopped by ${person(stream.stopped_by).name}`) : null);
}

function optionLabel(option) {
  return el("span", { class: "choice-text" },
    el("span", { class: "choice-label" }, plainText(option.text)),
    option.description ? el("div", { class: "choice-desc" }, plainText(option.description)) : null);
}

function renderElement(element, block, message, where) {
  const blockId = block.block_id;
  // outside input blocks every change is an interaction; inside one, only where the block
  // sets dispatch_action (docs.slack.dev/reference/interaction-payloads/block_actions-payload)
  const dispatch = where !== "input" || block.dispatch_action === true;
  const changed = (value, selected) => {
    setDraft(message, blockId, value);
    if (dispatch) sendAction(message, block, element, selected);
  };
  const name = `${message.ts}-${blockId}-${element.action_id}`;
  switch (element.type) {
    case "button": {
      const button = el("button", {
        type: "button",
        class: `bk-btn ${element.style || ""}`,
        "data-action-id": element.action_id,
      }, plainText(element.text));
      button.addEventListener("click", () => clickButton(button, message, block, element));
      return button;
    }
    case "radio_buttons":
    case "checkboxes": {
      const multi = element.type === "checkboxes";
      const draft = getDraft(message, blockId) ?? initialPick(element);
      const chosen = multi ? new Set(draft || []) : new Set(draft ? [draft] : []);
      return el("div", { class: "choices", role: multi ? "group" : "radiogroup" }, (element.options || []).map((option) => {
        const input = el("input", { type: multi ? "checkbox" : "radio", name, value: option.value, checked: chosen.has(option.value) });
        input.addEventListener("change", () => {
          if (multi) {
            const picked = [...input.closest(".choices").querySelectorAll("input:checked")].map((i) => i.value);
            changed(picked, picked);
          } else changed(option.value, option.value);
        });
        return el("label", { class: "choice" }, input, optionLabel(option));
      }));
    }
    case "static_select": {
      const options = allOptions(element);
      const select = el("select", { class: "select", "aria-label": plainText(element.placeholder) || "Select an item" },
        el("option", { value: "", disabled: true, selected: !getDraft(message, blockId) }, plainText(element.placeholder) || "Select an item"),
        options.map((o) => el("option", { value: o.value, selected: (getDraft(message, blockId) ?? initialPick(element)) === o.value }, plainText(o.text))));
      select.addEventListener("change", async () => {
        // a menu outside a form with a confirm (Change a decision) asks first, as Slack does
        if (dispatch && element.confirm && !(await confirmDialog(element.confirm))) {
          select.value = "";
          return;
        }
        changed(select.value, select.value);
      });
      return select;
    }
    case "multi_static_select": {
      const options = allOptions(element);
      const picked = getDraft(message, blockId) || [];
      const box = el("div", { class: "multi" });
      const chips = el("div", { class: "chips" }, picked.map((value) => {
        const option = options.find((o) => o.value === value);
        return el("span", { class: "chip" }, option ? plainText(option.text) : value,
          el("button", { type: "button", "aria-label": "Remove", onclick: () => { const rest = picked.filter((v) => v !== value); changed(rest, rest); rerenderMessage(message); } }, "×"));
      }));
      const select = el("select", { class: "select", "aria-label": plainText(element.placeholder) || "Select options" },
        el("option", { value: "", selected: true }, plainText(element.placeholder) || "Select options"),
        options.filter((o) => !picked.includes(o.value)).map((o) => el("option", { value: o.value }, plainText(o.text))));
      select.addEventListener("change", () => { const next = [...picked, select.value]; changed(next, next); rerenderMessage(message); });
      box.append(chips, select);
      return box;
    }
    case "external_select":
    case "multi_external_select":
      return typeahead(element, block, message, changed);
    case "plain_text_input": {
      const attrs = { class: "text-input", placeholder: plainText(element.placeholder), maxlength: element.max_length || null, "aria-label": plainText(block.label) || "Answer" };
      const input = element.multiline ? el("textarea", { ...attrs, rows: 3 }) : el("input", { ...attrs, type: "text" });
      input.value = getDraft(message, blockId) || element.initial_value || "";
      input.addEventListener("input", () => setDraft(message, blockId, input.value));
      return input;
    }
    case "users_select": {
      // the workspace's people, by name (Slack draws a searchable menu of members)
      const people = Object.entries((app.state && app.state.people) || {}).filter(([id]) => id !== app.state.bot);
      const current = getDraft(message, blockId) ?? element.initial_user ?? "";
      const select = el("select", { class: "select users-select", "aria-label": plainText(block.label) || "Choose a person" },
        el("option", { value: "", disabled: true, selected: !current }, plainText(element.placeholder) || "Choose a person"),
        people.map(([id, p]) => el("option", { value: id, selected: current === id }, p.name)));
      select.addEventListener("change", () => changed(select.value, select.value));
      return select;
    }
    case "datepicker": {
      const input = el("input", { type: "date", class: "select", "aria-label": plainText(block.label) || "Choose a date" });
      input.value = getDraft(message, blockId) || element.initial_date || "";
      input.addEventListener("change", () => changed(input.value, input.value));
      return input;
    }
    default:
      return el("span", { class: "context" }, `(${element.type})`);
  }
}

// What an untouched input holds: the option(s) the form preselected, as Slack sends them.
function initialPick(element) {
  if (element.initial_option && element.type === "external_select") return element.initial_option;
  if (element.initial_option) return element.initial_option.value;
  if (element.initial_options) return element.initial_options.map((o) => o.value);
  if (element.initial_user) return element.initial_user;
  if (element.initial_date) return element.initial_date;
  return undefined;
}

function allOptions(element) {
  return [...(element.options || []), ...(element.option_groups || []).flatMap((g) => g.options || [])];
}

function typeahead(element, block, message, changed) {
  const multi = element.type === "multi_external_select";
  const blockId = block.block_id;
  const draft = getDraft(message, blockId) ?? (multi ? element.initial_options : element.initial_option);
  const picked = multi ? draft || [] : draft ? [draft] : [];
  const wrap = el("div", { class: "typeahead" });
  const chips = multi ? el("div", { class: "chips" }, picked.map((o) => el("span", { class: "chip" }, plainText(o.text),
    el("button", { type: "button", "aria-label": "Remove", onclick: () => { const rest = picked.filter((p) => p.value !== o.value); changed(rest); rerenderMessage(message); } }, "×")))) : null;
  const input = el("input", { type: "text", class: "select text-input", placeholder: plainText(element.placeholder) || "Type to search", "aria-label": plainText(element.placeholder) || "Search options" });
  if (!multi && picked[0]) input.value = plainText(picked[0].text);
  const list = el("div", { class: "typeahead-list", hidden: true });
  let timer = null;
  const search = async () => {
    const reply = await post("/sandbox/options", {
      user: app.me, channel: message.channel, message_ts: message.ts, block_id: blockId, action_id: element.action_id, value: input.value,
    });
    list.replaceChildren(...(reply.options || []).map((o) => el("div", {
      role: "option",
      onmousedown: (event) => {
        event.preventDefault();
        const option = { text: o.text, value: o.value };
        if (multi) { changed([...picked.filter((p) => p.value !== o.value), option]); rerenderMessage(message); }
        else { input.value = plainText(o.text); changed(option, option); }
        list.hidden = true;
      },
    }, plainText(o.text))));
    if (!reply.options || !reply.options.length) list.replaceChildren(el("div", { class: "context" }, "No matches"));
    list.hidden = false;
  };
  input.addEventListener("focus", search);
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 150); });
  input.addEventListener("blur", () => { list.hidden = true; });
  wrap.append(...[chips, input, list].filter(Boolean));
  return wrap;
}

// -- interactions -------------------------------------------------------------

function picksOf(message) {
  const picks = {};
  for (const block of message.blocks || []) {
    if (block.type !== "input" || !block.block_id) continue;
    const draft = getDraft(message, block.block_id) ?? initialPick(block.element || {});
    if (draft !== undefined) picks[block.block_id] = draft;
  }
  return picks;
}

function confirmDialog(confirm) {
  return new Promise((resolve) => {
    const backdrop = $("dialog-backdrop");
    $("dialog-title").textContent = plainText(confirm.title) || "Are you sure?";
    $("dialog-text").replaceChildren(textObject(confirm.text) || "");
    const yes = $("dialog-confirm");
    const no = $("dialog-deny");
    yes.textContent = plainText(confirm.confirm) || "Yes";
    no.textContent = plainText(confirm.deny) || "Cancel";
    yes.className = `bk-btn ${confirm.style === "danger" ? "danger" : "primary"}`;
    const done = (answer) => { backdrop.hidden = true; yes.onclick = no.onclick = null; document.onkeydown = null; resolve(answer); };
    yes.onclick = () => done(true);
    no.onclick = () => done(false);
    document.onkeydown = (event) => { if (event.key === "Escape") done(false); };
    backdrop.hidden = false;
    yes.focus();
  });
}

async function clickButton(button, message, block, element) {
  if (element.confirm && !(await confirmDialog(element.confirm))) return;
  if (element.url) window.open(element.url, "_blank", "noopener");
  button.disabled = true;
  try {
    await sendAction(message, block, element);
  } finally {
    button.disabled = false;
  }
}

async function sendAction(message, block, element, selected) {
  const reply = await post("/sandbox/action", {
    user: app.me, channel: message.channel, message_ts: message.ts,
    block_id: block.block_id, action_id: element.action_id, picks: picksOf(message), selected,
  });
  if (!reply.ok) toast(reply.error || "That did not work");
}

// This start's token, in the page the sandbox served: no other page can write here.
const SANDBOX_TOKEN = document.querySelector('meta[name="sandbox-token"]').content;

async function post(path, body) {
  try {
    const headers = { "Content-Type": "application/json", "X-Sandbox-Token": SANDBOX_TOKEN };
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    return await response.json();
  } catch (error) {
    return { ok: false, error: `the sandbox is not answering (${error.message})` };
  }
}

let toastTimer = null;
function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

// -- messages ----------------------------------------------------------------

function senderOf(message) { return message.user || (message.bot_id ? app.state.bot : "USLACKBOT"); }

function renderFiles(message) {
  if (!message.files || !message.files.length) return null;
  return el("div", { class: "files" }, message.files.map((f) => {
    const kind = (f.name.split(".").pop() || "file").toUpperCase();
    return el("div", { class: "file" },
      el("div", { class: "file-icon" }, kind.slice(0, 4)),
      el("div", { style: "min-width:0;flex:1" },
        el("a", { class: "file-title", href: f.url_private_download, download: f.name, title: f.name }, f.title || f.name),
        el("div", { class: "file-sub" }, `${kind} · ${f.size ? `${(f.size / 1024).toFixed(1)} KB` : ""}`)),
      el("a", { href: f.url_private_download, download: f.name, class: "bk-btn", style: "line-height:30px" }, "Download"));
  }));
}

function renderReactions(message) {
  if (message.ephemeral) return null;
  const reactions = message.reactions || [];
  if (!reactions.length) return null;
  return el("div", { class: "reactions" }, reactions.map((r) => el("button", {
    type: "button",
    class: `reaction${r.users.includes(app.me) ? " mine" : ""}`,
    title: r.users.map((u) => person(u).name).join(", ") + ` reacted with :${r.name}:`,
    onclick: () => post("/sandbox/react", { user: app.me, channel: message.channel, ts: message.ts, name: r.name }),
  }, emoji(r.name), el("span", {}, String(r.count)))));
}

function renderThreadLink(message, inThread) {
  if (inThread || !message.reply_count) return null;
  const users = (message.reply_users || []).map((u) => avatar(u, "micro"));
  const last = tsDate(message.latest_reply);
  return el("div", { class: "thread-link", role: "button", tabindex: "0", onclick: () => openThread(message.channel, message.ts) },
    users, el("span", { class: "count" }, `${message.reply_count} ${message.reply_count === 1 ? "reply" : "replies"}`),
    el("span", { class: "last" }, `Last reply ${dayLabel(last).toLowerCase()} at ${clock(last)}`));
}

function renderMessage(message, continued, inThread) {
  const sender = senderOf(message);
  const p = person(sender);
  const isApp = Boolean(message.bot_id) || sender === "USLACKBOT";
  const date = tsDate(message.ts);
  const body = el("div", { class: "msg-body" },
    continued ? null : el("div", { class: "meta" },
      el("span", { class: "name" }, p.name),
      isApp ? el("span", { class: "app-badge" }, "APP") : null,
      el("a", { class: "time", title: date.toLocaleString() }, clock(date))),
    message.ephemeral ? el("div", { class: "only-you" }, "👁 Only visible to you") : null,
    message.stream ? renderStream(message) : null,
    message.blocks && message.blocks.length ? renderBlocks(message) : (message.text ? el("div", { class: "mrkdwn", html: mrkdwn(message.text) }) : null),
    message.edited ? el("span", { class: "edited" }, "(edited)") : null,
    renderFiles(message),
    renderReactions(message),
    renderThreadLink(message, inThread));
  const gutter = el("div", { class: "gutter" }, continued ? el("div", { class: "hover-time" }, clock(date)) : avatar(sender));
  return el("div", {
    class: `msg${continued ? " continued" : ""}${message.ephemeral ? " ephemeral" : ""}`,
    "data-ts": message.ts,
    "data-sender": sender,
    "data-ephemeral": message.ephemeral ? "true" : null,
  }, gutter, body);
}

function rerenderMessage(message) {
  for (const node of document.querySelectorAll(`.msg[data-ts="${CSS.escape(message.ts)}"]`)) {
    const fresh = renderMessage(message, node.classList.contains("continued"), node.closest("#thread-messages") !== null);
    node.replaceWith(fresh);
    fresh.dataset.key = node.dataset.key;
    app.rendered.set(fresh.dataset.key, fresh);
  }
}

function renderList(container, messages, inThread, extras) {
  const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
  const nodes = [];
  let previous = null;
  let lastDay = null;
  for (const message of messages) {
    const date = tsDate(message.ts);
    const day = date.toDateString();
    if (!inThread && day !== lastDay) {
      nodes.push(el("div", { class: "day-divider" }, el("span", {}, dayLabel(date))));
      lastDay = day;
    }
    const continued = Boolean(previous && !previous.ephemeral && !message.ephemeral && senderOf(previous) === senderOf(message)
      && parseFloat(message.ts) - parseFloat(previous.ts) < 300 && !previous.reply_count);
    const key = `${inThread ? "t" : "c"}|${message.ts}|${continued}|${app.me}|${JSON.stringify(message)}`;
    app.used.add(key);
    let node = app.rendered.get(key);
    if (!node) {
      node = renderMessage(message, continued, inThread);
      node.dataset.key = key;
      app.rendered.set(key, node);
    }
    nodes.push(node);
    if (extras && message === messages[0] && messages.length > 1) nodes.push(extras(messages.length - 1));
    previous = message;
  }
  const same = nodes.length === container.children.length && nodes.every((n, i) => container.children[i] === n);
  if (same) return;
  // A list shown anew starts at the bottom; one already read stays where the reader is,
  // unless they were at the bottom (as in Slack: scrolling up to read is never undone).
  const fresh = container.dataset.showing !== `${app.channel}|${inThread ? app.thread : ""}`;
  container.dataset.showing = `${app.channel}|${inThread ? app.thread : ""}`;
  const top = container.scrollTop;
  const focus = focusIn(container);
  place(container, nodes);
  container.scrollTop = fresh || atBottom ? container.scrollHeight : top;
  if (focus) restoreFocus(container, focus);
}

// The list brought up to date without taking out the nodes that stay: a node moved or removed
// loses the focus (and the keystrokes typed next), so only new ones are inserted.
function place(container, nodes) {
  const keep = new Set(nodes);
  for (const child of [...container.children]) if (!keep.has(child)) child.remove();
  nodes.forEach((node, i) => {
    if (container.children[i] !== node) container.insertBefore(node, container.children[i] || null);
  });
}

// What has the focus in a list (a form's text box), to give it back if its message was redrawn.
function focusIn(container) {
  const active = document.activeElement;
  if (!active || !container.contains(active) || !/^(TEXTAREA|INPUT|SELECT)$/.test(active.tagName)) return null;
  const msg = active.closest(".msg");
  const block = active.closest("[data-block-id]");
  return {
    node: active,
    ts: msg && msg.dataset.ts,
    block: block && block.dataset.blockId,
    start: active.selectionStart,
    end: active.selectionEnd,
  };
}

function restoreFocus(container, focus) {
  let target = focus.node;
  if (!target.isConnected && focus.ts && focus.block) {
    target = container.querySelector(`.msg[data-ts="${CSS.escape(focus.ts)}"] [data-block-id="${CSS.escape(focus.block)}"] textarea, `
      + `.msg[data-ts="${CSS.escape(focus.ts)}"] [data-block-id="${CSS.escape(focus.block)}"] input[type=text]`);
  }
  if (!target || !target.isConnected || document.activeElement === target) return;
  target.focus();
  if (focus.start !== null && focus.start !== undefined && "setSelectionRange" in target) {
    try { target.setSelectionRange(focus.start, focus.end); } catch (error) { /* not a text box */ }
  }
}

function byTs(a, b) { return parseFloat(a.ts) - parseFloat(b.ts); }

function render() {
  const state = app.state;
  if (!state) return;
  app.used = new Set();
  try {
    renderWorkspace(state);
  } finally {
    for (const key of [...app.rendered.keys()]) if (!app.used.has(key)) app.rendered.delete(key);
  }
}

function renderWorkspace(state) {
  $("team-name").textContent = state.team;
  renderModal(state.modal);
  const inApp = app.channel && app.channel.startsWith("D");
  $("open-app").classList.toggle("active", Boolean(inApp));
  $("app-tabs").hidden = !inApp;
  const showHome = inApp && app.tab === "home";
  $("tab-home").classList.toggle("active", Boolean(showHome));
  $("tab-messages").classList.toggle("active", Boolean(inApp && !showHome));
  $("home").hidden = !showHome;
  $("messages").hidden = Boolean(showHome);
  $("composer").hidden = Boolean(showHome);
  if (showHome) {
    const view = state.home;
    $("home").replaceChildren(view ? renderBlocks({ ts: "home", channel: app.channel, blocks: view.blocks })
      : el("div", { class: "empty-channel" }, "Opening closebot's Home…"));
  }
  $("search-label").textContent = `Search ${state.team}`;
  const channel = state.channels.find((c) => c.id === app.channel) || state.channels[0];
  app.channel = channel.id;
  $("channel-list").replaceChildren(...state.channels.filter((c) => !c.id.startsWith("D")).map((c) => el("li", {
    class: c.id === app.channel ? "active" : null, "data-channel": c.id, onclick: () => openChannel(c.id),
  }, el("span", { class: "hash" }, "#"), c.name)));
  $("dm-list").replaceChildren(...Object.entries(state.people).filter(([id]) => id !== state.bot).map(([id, p]) =>
    el("li", {}, avatar(id, "tiny"), p.name + (id === app.me ? " (you)" : ""))));
  $("channel-name").textContent = inApp ? "closebot" : `# ${channel.name}`;
  $("channel-topic").textContent = channel.topic;
  $("channel-members").textContent = `👥 ${channel.members}`;
  $("composer-input").placeholder = `Message #${channel.name}`;
  $("me-avatar").replaceWith(Object.assign(avatar(app.me, "tiny"), { id: "me-avatar" }));
  const switcher = $("user-switcher");
  if (!switcher.options.length) {
    for (const [id, p] of Object.entries(state.people)) {
      if (id !== state.bot) switcher.append(el("option", { value: id }, `${p.name} — ${p.title}`));
    }
  }
  switcher.value = app.me;

  const inChannel = state.messages.filter((m) => m.channel === app.channel);
  const mine = state.ephemerals.filter((e) => e.channel === app.channel);
  const roots = [...inChannel.filter((m) => !m.thread_ts), ...mine.filter((e) => !e.thread_ts)].sort(byTs);
  const list = $("messages");
  if (!roots.length) {
    list.replaceChildren(el("div", { class: "empty-channel" }, el("h2", {}, `# ${channel.name}`),
      el("p", {}, "This is the very beginning of the channel. Type ", el("code", {}, "/close 2026-10"), " below to start a month-end close."), ));
  } else {
    if (list.querySelector(".empty-channel")) list.replaceChildren();
    renderList(list, roots, false);
  }

  if (app.awaitingClose) {  // after /close, its thread opens by itself once its root is posted
    const started = roots.find((m) => m.bot_id && !m.ephemeral && parseFloat(m.ts) >= app.awaitingClose - 5
      && !app.seenRoots.has(m.ts));
    if (started) {
      app.awaitingClose = null;
      app.thread = started.ts;
      saveLocation();
    }
  }
  const pane = $("thread");
  const root = app.thread && inChannel.find((m) => m.ts === app.thread);
  if (!root) {
    pane.hidden = true;
    return;
  }
  pane.hidden = false;
  $("thread-channel").textContent = `# ${channel.name}`;
  const replies = [root, ...[...inChannel.filter((m) => m.thread_ts === root.ts), ...mine.filter((e) => e.thread_ts === root.ts)].sort(byTs)];
  renderList($("thread-messages"), replies, true, (n) => el("div", { class: "replies-divider" }, `${n} ${n === 1 ? "reply" : "replies"}`));
  renderStatus((state.statuses || {})[`${channel.id}:${root.ts}`]);
}

// A modal the app opened for this person (views.open): drawn over the page until closed.
function renderModal(view) {
  const backdrop = $("modal-backdrop");
  if (!view) { backdrop.hidden = true; backdrop.dataset.view = ""; return; }
  if (backdrop.dataset.view === view.id && !backdrop.hidden) return;
  backdrop.dataset.view = view.id;
  $("modal-title").textContent = plainText(view.title);
  $("modal-close").textContent = plainText(view.close) || "Close";
  $("modal-body").replaceChildren(renderBlocks({ ts: `modal-${view.id}`, channel: app.channel, blocks: view.blocks }));
  backdrop.hidden = false;
  $("modal-close").focus();
}

async function closeModal() {
  $("modal-backdrop").hidden = true;
  await post("/sandbox/close_modal", { user: app.me });
}

// assistant.threads.setStatus: "closebot is working…" under the thread, its loading
// messages rotating, until the bot replies or clears it.
function renderStatus(status) {
  const line = $("thread-status");
  clearInterval(app.statusTimer);
  if (!status) { line.hidden = true; line.replaceChildren(); return; }
  const messages = status.loading_messages && status.loading_messages.length ? status.loading_messages : [status.status];
  let n = 0;
  const text = el("span", { class: "status-text" }, messages[0]);
  line.replaceChildren(el("span", { class: "status-dots" }, el("i"), el("i"), el("i")),
    el("b", {}, person(app.state.bot).name), " ", el("span", { class: "status-what" }, status.status), " ", text);
  line.hidden = false;
  app.statusTimer = setInterval(() => { n = (n + 1) % messages.length; text.textContent = messages[n]; }, 2500);
}

// -- navigation and state -----------------------------------------------------

function saveLocation() {
  const hash = `#/${app.channel}${app.thread ? `/thread/${app.thread}` : ""}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}
function readLocation() {
  const m = location.hash.match(/^#\/([A-Z0-9]+)(?:\/thread\/([0-9.]+))?$/);
  if (m) { app.channel = m[1]; app.thread = m[2] || null; }
}
function openChannel(id) { app.channel = id; app.thread = null; saveLocation(); render(); }
// closebot's App Home: the Home tab (published by the bot on app_home_opened) or the DM.
function openApp(tab) {
  app.channel = `D${app.me}`;
  app.tab = tab;
  app.thread = null;
  saveLocation();
  render();
  post("/sandbox/home", { user: app.me, tab });
}
function openThread(channel, ts) { app.channel = channel; app.thread = ts; saveLocation(); render(); $("thread-input").focus(); }

async function refresh() {
  if (app.fetching) { app.again = true; return; }
  app.fetching = true;
  try {
    do {
      app.again = false;
      const response = await fetch(`/sandbox/state?user=${encodeURIComponent(app.me)}`);
      app.state = await response.json();
      render();
    } while (app.again);
  } catch (error) {
    toast(`The sandbox is not answering (${error.message}); is closebot sandbox still running?`);
  } finally {
    app.fetching = false;
    document.body.dataset.version = app.state ? app.state.version : "";
  }
}

function listen() {
  const source = new EventSource("/sandbox/events");
  source.onmessage = () => refresh();
  source.onerror = () => { /* EventSource reconnects by itself */ };
}

function composer(form, input, threadOf) {
  const send = async () => {
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    $("command-hint").hidden = true;
    if (/^\/close\b/.test(text) && !threadOf()) {
      app.seenRoots = new Set(((app.state && app.state.messages) || []).filter((m) => !m.thread_ts).map((m) => m.ts));
      app.awaitingClose = Date.now() / 1000;
    }
    const reply = await post("/sandbox/say", { user: app.me, channel: app.channel, text, thread_ts: threadOf() });
    if (!reply.ok && reply.error && reply.error !== "invalid_command") toast(reply.error);
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); send(); });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); send(); }
  });
  input.addEventListener("input", () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
    if (form.id === "composer") $("command-hint").hidden = !/^\/c?l?o?s?e?$/.test(input.value);
  });
}

// -- files: the + button, or dropped on a conversation -------------------------

function toBase64(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

async function shareFiles(files, threadOf) {
  for (const file of Array.from(files || [])) {
    const data = toBase64(await file.arrayBuffer());
    const reply = await post("/sandbox/file", { user: app.me, channel: app.channel, thread_ts: threadOf(), name: file.name, data });
    if (!reply.ok) toast(`${file.name}: ${reply.error || "not shared"}`);
  }
}

function fileTarget(button, picker, zone, threadOf) {
  button.addEventListener("click", () => picker.click());
  picker.addEventListener("change", async () => { await shareFiles(picker.files, threadOf); picker.value = ""; });
  const over = (event) => {
    if (!event.dataTransfer || !Array.from(event.dataTransfer.types || []).includes("Files")) return;
    event.preventDefault();
    zone.classList.add("dropping");
  };
  zone.addEventListener("dragenter", over);
  zone.addEventListener("dragover", over);
  zone.addEventListener("dragleave", (event) => { if (event.target === zone) zone.classList.remove("dropping"); });
  zone.addEventListener("drop", (event) => {
    zone.classList.remove("dropping");
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    shareFiles(event.dataTransfer.files, threadOf);
  });
}

function main() {
  readLocation();
  const asUser = new URLSearchParams(location.search).get("as");
  if (asUser) app.me = asUser;
  $("user-switcher").addEventListener("change", (event) => {
    app.me = event.target.value;
    localStorage.setItem("closebot-sandbox-user", app.me);
    app.rendered.clear();
    refresh();
  });
  $("thread-close").addEventListener("click", () => { app.thread = null; saveLocation(); render(); });
  $("modal-close").addEventListener("click", closeModal);
  document.addEventListener("keydown", (event) => { if (event.key === "Escape" && !$("modal-backdrop").hidden) closeModal(); });
  $("open-app").addEventListener("click", () => openApp("home"));
  $("tab-home").addEventListener("click", () => openApp("home"));
  $("tab-messages").addEventListener("click", () => openApp("messages"));
  composer($("composer"), $("composer-input"), () => null);
  composer($("thread-composer"), $("thread-input"), () => app.thread);
  fileTarget($("composer-attach"), $("composer-file"), $("messages"), () => null);
  fileTarget($("thread-attach"), $("thread-file"), $("thread"), () => app.thread);
  window.addEventListener("hashchange", () => { readLocation(); render(); });
  document.querySelector("#command-hint .hint-row").addEventListener("mousedown", (event) => {
    event.preventDefault();
    const input = $("composer-input");
    input.value = "/close ";
    $("command-hint").hidden = true;
    input.focus();
  });
  refresh().then(listen);
}

main();
