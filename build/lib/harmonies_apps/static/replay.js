/* The replay viewer: frames were computed in Python (harmonies_apps.replay) and are embedded as JSON. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("data").textContent);
  var G = null, idx = 0, series = null;
  var $ = function (id) { return document.getElementById(id); };

  function lastCell(last) {
    var c = last ? H.cellOf(last.action) : null;
    return c === null ? null : {player: last.player, cell: c};
  }

  function buildSeries(g) {
    var pts = g.turn_starts.slice();
    if (pts[pts.length - 1] !== g.frames.length - 1) pts.push(g.frames.length - 1);
    return g.names.map(function (_, p) {
      return pts.map(function (fi) { return [g.frames[fi].turn, g.frames[fi].players[p].scores.total]; });
    });
  }

  function selectGame(k) {
    G = DATA.games[k];
    series = buildSeries(G);
    var c = G.config;
    $("cfg").textContent = G.label + " \u00b7 " + (c.num_players === 1 ? "solo" : c.num_players + " players") +
      " \u00b7 Side " + c.side + " \u00b7 Spirits " + (c.spirits ? "on" : "off") + " \u00b7 seed " + c.seed +
      " \u00b7 " + c.actions + " actions";
    $("slider").max = G.frames.length - 1;
    show(0);
  }

  function turnIndex(i) {  // index in turn_starts of the turn holding frame i
    var t = 0;
    for (var k = 0; k < G.turn_starts.length; k++) if (G.turn_starts[k] <= i) t = k;
    return t;
  }

  function show(i) {
    idx = Math.max(0, Math.min(G.frames.length - 1, i));
    var f = G.frames[idx], st = G.static;
    $("slider").value = idx;
    $("counter").textContent = "action " + idx + " / " + (G.frames.length - 1) + " \u00b7 turn " +
      (turnIndex(idx) + 1) + " / " + G.turn_starts.length;
    $("status").innerHTML = H.statusHTML(f, G.names);
    $("lastmove").textContent = f.last ? G.names[f.last.player] + ": " + f.last.text : "Start of the game";
    $("central").innerHTML = H.centralHTML(st, f);
    $("pouch").innerHTML = H.pouchHTML(st, f);
    $("hand").innerHTML = H.handHTML(st, f);
    $("market").innerHTML = f.market.map(function (c, m) { return H.cardHTML(st, c, {slot: m}); }).join("");
    var lc = lastCell(f.last);
    $("players").innerHTML = f.players.map(function (_, p) {
      return H.playerPanel(st, f, p, G.names, {last: lc && lc.player === p ? lc.cell : null});
    }).join("");
    $("scores").innerHTML = H.scoreTable(st, f, G.names);
    $("chart").innerHTML = H.chartSVG(series, G.names, f.turn, G.frames[G.frames.length - 1].turn, "turns");
    var a = G.annotations[String(idx)];
    if (a) {
      $("annot").innerHTML = '<div class="box annot" style="margin-top:10px"><h3>Agent\u2019s candidate plans here</h3>' +
        (a.note ? '<div class="help">' + H.esc(a.note) + "</div>" : "") + "<ol>" + a.candidates.map(function (c) {
          return '<li class="' + (c.played ? "played" : "") + '"><span class="val">' + (c.value === null ? "\u2013" : c.value.toFixed(2)) +
            (c.visits === null || c.visits === undefined ? "" : " (" + c.visits + " visits)") +
            "</span>" + H.esc(c.words.join("; ")) + (c.played ? " \u2190 played" : "") + "</li>";
        }).join("") + "</ol></div>";
    } else {
      $("annot").innerHTML = "";
    }
    $("prev").disabled = $("first").disabled = $("prevTurn").disabled = idx === 0;
    $("next").disabled = $("last").disabled = $("nextTurn").disabled = idx === G.frames.length - 1;
    document.body.setAttribute("data-frame", idx);
  }

  function nextTurn() {
    var t = turnIndex(idx);
    show(t + 1 < G.turn_starts.length ? G.turn_starts[t + 1] : G.frames.length - 1);
  }
  function prevTurn() {
    var t = turnIndex(idx);
    show(G.turn_starts[t] < idx ? G.turn_starts[t] : G.turn_starts[Math.max(0, t - 1)]);
  }

  $("first").onclick = function () { show(0); };
  $("last").onclick = function () { show(G.frames.length - 1); };
  $("prev").onclick = function () { show(idx - 1); };
  $("next").onclick = function () { show(idx + 1); };
  $("prevTurn").onclick = prevTurn;
  $("nextTurn").onclick = nextTurn;
  $("slider").oninput = function () { show(parseInt(this.value, 10)); };
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "SELECT") return;
    var k = e.key, done = true;
    if (k === "ArrowRight") show(idx + 1);
    else if (k === "ArrowLeft") show(idx - 1);
    else if (k === "ArrowDown" || k === "PageDown") nextTurn();
    else if (k === "ArrowUp" || k === "PageUp") prevTurn();
    else if (k === "Home") show(0);
    else if (k === "End") show(G.frames.length - 1);
    else done = false;
    if (done) e.preventDefault();
  });
  if (DATA.games.length > 1) {
    var sel = $("game");
    sel.style.display = "";
    sel.innerHTML = DATA.games.map(function (g, k) { return '<option value="' + k + '">' + H.esc(g.label) + "</option>"; }).join("");
    sel.onchange = function () { selectGame(parseInt(this.value, 10)); };
  }
  selectGame(0);
})();
