// A Plotly figure drawn once per change (aflite_app/plotly_once.py): plotly.js from the installed plotly
// package (served by this server, never a CDN), one Plotly.react per new figure, selection events sent back in
// st.plotly_chart's on_select shape: {points, point_indices, box, lasso}.
const shared = (window.__afliteOnce = window.__afliteOnce || {});

function loadPlotly(src) {
  // a classic <script>: Chromium parses a large script off the main thread and caches its code. plotly.min.js
  // is a UMD bundle that, without a module system, sets self.moduleName (plotly.py's build) or self.Plotly.
  if (!shared.plotly) {
    shared.plotly = new Promise((resolve, reject) => {
      const before = window.moduleName;
      const tag = document.createElement("script");
      tag.src = src;
      tag.async = true;
      tag.onload = () => {
        const lib = window.moduleName !== before ? window.moduleName : window.Plotly;
        if (before === undefined) delete window.moduleName;
        else window.moduleName = before;
        if (lib && typeof lib.react === "function") resolve(lib);
        else reject(new Error("plotly.js did not load"));
      };
      tag.onerror = () => reject(new Error("plotly.js could not be loaded"));
      document.head.appendChild(tag);
    });
    shared.plotly.catch(() => {
      shared.plotly = null; // a later figure tries again
    });
  }
  return shared.plotly;
}

function plain(value) {
  return value === undefined ? null : value;
}

function selectionOf(ev) {
  const out = { points: [], point_indices: [], box: [], lasso: [] };
  if (!ev) return out;
  const seen = new Set();
  for (const p of ev.points || []) {
    const point = {
      curve_number: p.curveNumber,
      point_number: p.pointNumber,
      point_index: p.pointIndex,
      x: plain(p.x),
      y: plain(p.y),
    };
    if (p.z !== undefined) point.z = p.z;
    if (p.customdata !== undefined) point.customdata = p.customdata;
    if (p.text !== undefined) point.text = p.text;
    if (p.label !== undefined) point.label = p.label;
    if (p.value !== undefined) point.value = p.value;
    if (p.data && p.data.legendgroup) point.legendgroup = p.data.legendgroup;
    out.points.push(point);
    if (Number.isInteger(p.pointIndex)) seen.add(p.pointIndex);
  }
  out.point_indices = Array.from(seen);
  for (const s of ev.selections || []) {
    if (s.type === "rect") {
      out.box.push({ xref: s.xref, yref: s.yref, x: [s.x0, s.x1], y: [s.y0, s.y1] });
    } else if (s.type === "path" && s.path) {
      const xs = [];
      const ys = [];
      for (const part of s.path.replace("M", "").replace("Z", "").split("L")) {
        const [x, y] = part.split(",").map(Number);
        xs.push(x);
        ys.push(y);
      }
      out.lasso.push({ xref: s.xref, yref: s.yref, x: xs, y: ys });
    }
  }
  return out;
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  let gd = parentElement.querySelector("div.aflite-plot");
  if (!gd) {
    // the same test id and class as st.plotly_chart's element, so that tests and benchmarks find either
    const box = document.createElement("div");
    box.className = "stPlotlyChart";
    box.setAttribute("data-testid", "stPlotlyChart");
    gd = document.createElement("div");
    gd.className = "aflite-plot";
    gd.style.width = "100%";
    box.appendChild(gd);
    parentElement.appendChild(box);
  }
  const token = data.spec + "\u0000" + data.config;
  if (gd.__afliteToken === token) return () => shared.plotly && shared.plotly.then((P) => P.purge(gd));
  gd.__afliteToken = token;
  gd.__afliteSend = setStateValue;
  gd.__afliteModes = data.modes || [];
  const pending = loadPlotly(data.src).then((Plotly) => {
    if (gd.__afliteToken !== token) return; // a newer figure arrived while plotly.js loaded
    const fig = JSON.parse(data.spec);
    const layout = fig.layout || {};
    const modes = gd.__afliteModes;
    const selecting = modes.length > 0;
    if (selecting) {
      if (!layout.clickmode) layout.clickmode = modes.includes("points") ? "event+select" : "event";
      if (!layout.hovermode) layout.hovermode = "closest";
      if (!layout.dragmode) layout.dragmode = modes.includes("points") ? "pan" : modes.includes("box") ? "select" : "lasso";
    }
    const config = Object.assign({ displaylogo: false, responsive: true }, JSON.parse(data.config));
    const remove = (config.modeBarButtonsToRemove || []).slice();
    if (!modes.includes("lasso")) remove.push("lasso2d");
    if (!modes.includes("box")) remove.push("select2d");
    config.modeBarButtonsToRemove = remove;
    Plotly.react(gd, fig.data || [], layout, config);
    if (selecting && !gd.__afliteWired) {
      gd.__afliteWired = true;
      // every user event is a new value (seq), so that the same selection made again on a new figure counts
      const send = (ev) => {
        shared.seq = (shared.seq || 0) + 1;
        gd.__afliteSend("selection", Object.assign(selectionOf(ev), { seq: shared.seq }));
      };
      gd.on("plotly_selected", (ev) => {
        if (ev) send(ev);
      });
      gd.on("plotly_click", (ev) => {
        if (gd.__afliteModes.includes("points")) send({ points: ev ? ev.points : [] });
      });
      gd.on("plotly_deselect", () => send(null));
      gd.on("plotly_doubleclick", () => send(null));
    }
  });
  pending.catch((err) => {
    gd.textContent = "This chart could not be drawn: " + (err && err.message ? err.message : "plotly.js failed") + ".";
  });
  return () => shared.plotly && shared.plotly.then((P) => P.purge(gd));
}
