/* The play page: talks to harmonies serve's JSON API and draws with harmonies.js. */
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var ST = null, S = null, selColour = null, selSlot = null, busy = false, polling = false;
  /* The current game's token: the server hands it out once, when the game is created, and refuses (403) every
     request on the game that does not carry it in the X-Game-Token header (links: ?token=). */
  var TOKEN = null;

  function api(method, path, body) {
    var init = {method: method, headers: {}};
    if (TOKEN !== null) init.headers["X-Game-Token"] = TOKEN;
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch(path, init).then(function (r) {
      return r.json().then(function (d) { return {ok: r.ok, status: r.status, data: d}; },
        function () { return {ok: false, status: r.status, data: {error: "the server answered " + r.status}}; });
    });
  }

  function message(text, kind) {
    var m = $("msg");
    m.className = "msg" + (text ? " " + (kind || "err") : "");
    m.textContent = text || "";
  }

  function grouped(legal) {
    var g = {take: {}, place: {}, card: {}, cube: {}, keep: {}, replace: {}, end: null, any: legal.length > 0};
    legal.forEach(function (l) {
      if (l.kind === "take_tokens") g.take[l.x] = l.action;
      else if (l.kind === "place_token") { (g.place[l.x] = g.place[l.x] || {})[l.y] = l.action; }
      else if (l.kind === "take_card") g.card[l.x] = l.action;
      else if (l.kind === "place_cube") { (g.cube[l.x] = g.cube[l.x] || {})[l.y] = l.action; }
      else if (l.kind === "keep_spirit") g.keep[l.x] = l.action;
      else if (l.kind === "solo_replace") g.replace[l.x] = l.action;
      else if (l.kind === "end_turn") g.end = l.action;
    });
    return g;
  }

  /* Per other seat, the cells its latest turn changed (marked on its board so you can follow the bots). */
  function recentCells(log, me) {
    var out = {}, phase = {};  // phase[p]: undefined = not seen yet, 1 = in p's latest turn, 2 = done
    var ends = function (a) { return a >= 262; };  // end the turn, or solo: discard a card and end the turn
    for (var k = log.length - 1; k >= 0; k--) {
      var e = log[k], p = e.player;
      if (p === me || phase[p] === 2) continue;
      if (phase[p] === undefined) {
        phase[p] = 1;
        out[p] = [];
        if (ends(e.action)) continue;
      } else if (ends(e.action)) {
        phase[p] = 2;
        continue;
      }
      var c = H.cellOf(e.action);
      if (c !== null) out[p].push(c);
    }
    return out;
  }

  function render() {
    var s = S, t = s.table, me = s.seat, g = grouped(s.legal);
    if (selSlot !== null && !g.cube[selSlot]) selSlot = null;
    if (selColour !== null && !g.place[selColour]) selColour = null;
    if (selSlot === null && selColour === null) {
      var cols = Object.keys(g.place);
      if (cols.length) selColour = parseInt(cols[0], 10);
    }
    var cells = selSlot !== null ? g.cube[selSlot] : (selColour !== null ? g.place[selColour] : null);
    $("cfg").textContent = (t.num_players === 1 ? "solo" : t.num_players + " players") + " \u00b7 Side " + t.side +
      " \u00b7 Spirits " + (t.spirits ? "on" : "off");
    $("status").innerHTML = s.result ? '<span class="over ' + H.esc(s.outcome || "") + '" id="result" data-outcome="' +
      H.esc(s.outcome || "") + '">' + H.esc(s.result) + "</span>" : H.statusHTML(t, s.names);
    $("thinking").className = "thinking" + (s.thinking ? " on" : "");
    $("thinker").textContent = s.bot || "";
    $("central").innerHTML = H.centralHTML(ST, t, {legal: g.take});
    var handLegal = {};
    Object.keys(g.place).forEach(function (c) { handLegal[c] = true; });
    $("hand").innerHTML = t.current === me ? H.handHTML(ST, t, {legal: handLegal, selected: selSlot === null ? selColour : null})
      : '<div class="hand"><span class="help">' + (t.over ? "the game is over" : "not your turn") + "</span></div>";
    $("pouch").innerHTML = H.pouchHTML(ST, t);
    $("market").innerHTML = t.market.map(function (c, m) {
      var extra = g.replace[m] !== undefined ? '<div><button class="btn2" data-action="' + g.replace[m] +
        '" title="discard this card, replace it from the draw pile and end your turn">discard &amp; end turn</button></div>' : "";
      return H.cardHTML(ST, c, {slot: m, action: g.card[m], extra: extra});
    }).join("");
    var heldSelect = {};
    Object.keys(g.cube).forEach(function (k) { heldSelect[k] = true; });
    var recent = recentCells(s.log, me);
    var order = [me];
    for (var p = 0; p < t.num_players; p++) if (p !== me) order.push(p);
    $("players").innerHTML = order.map(function (p) {
      return H.playerPanel(ST, t, p, s.names, p === me ? {you: true, legalCells: cells, heldSelect: heldSelect,
        selectedSlot: selSlot, dealtActions: g.keep} : {last: recent[p]});
    }).join("");
    $("scores").innerHTML = H.scoreTable(ST, t, s.names);
    $("log").innerHTML = s.log.slice().reverse().map(function (l) {
      return "<div><b>" + H.esc(s.names[l.player]) + ":</b> " + H.esc(l.text) + "</div>";
    }).join("") || '<span class="help">nothing yet</span>';
    $("legal").innerHTML = s.legal.map(function (l) {
      return '<li><a data-action="' + l.action + '">' + H.esc(l.text) + "</a></li>";
    }).join("") || '<li class="help">none now</li>';
    $("endTurn").disabled = g.end === null || busy;
    $("endTurn").setAttribute("data-end", g.end === null ? "" : g.end);
    var hint = "";
    if (s.your_turn) {
      var parts = [];
      if (Object.keys(g.keep).length) parts.push("keep one of your dealt Spirit cards (under your board)");
      if (Object.keys(g.take).length) parts.push("take the tokens of a highlighted central space");
      if (Object.keys(g.place).length) parts.push("place your tokens: pick a colour in your hand, then a highlighted cell");
      if (selSlot !== null) parts.push("place a cube: click a highlighted cell of your board");
      else if (Object.keys(g.cube).length) parts.push("place a cube: click a highlighted held card, then a cell");
      if (Object.keys(g.card).length) parts.push("take a highlighted market card");
      if (Object.keys(g.replace).length) parts.push("or discard a market card");
      if (g.end !== null) parts.push("end your turn");
      hint = "Your turn: " + parts.join("; ") + ".";
    }
    $("hint").textContent = hint;
    if (s.error) message(s.error);
    $("after").style.display = t.over ? "" : "none";
    $("endTurn").style.display = t.over ? "none" : "";
    $("newGame").style.visibility = t.over ? "hidden" : "";  // hidden, not removed: the header keeps its height
    if (t.over) {
      var q = "?token=" + encodeURIComponent(TOKEN || "");
      $("download").href = "/api/games/" + s.id + "/record" + q;
      $("replayLink").href = "/api/games/" + s.id + "/replay" + q;
    }
    document.body.setAttribute("data-state", t.over ? "over" : s.thinking ? "thinking" : s.your_turn ? "your-turn" : "waiting");
    document.body.setAttribute("data-turn", t.turn);
  }

  /* The new-game form sits below the game (play.html), so showing it when a game ends never moves the board. */
  function setState(data) {
    var prevId = S && S.id, prevOver = S && S.table.over;
    if (data.id !== prevId) { $("setupBox").style.display = "none"; window.scrollTo(0, 0); }  // a new game
    if (data.table.over && !(data.id === prevId && prevOver)) $("setupBox").style.display = "";
    S = data;
    if (data.static) ST = data.static;
    render();
    if (S.thinking && !polling) poll();
  }

  function poll() {
    polling = true;
    api("GET", "/api/games/" + S.id + "?wait=0.5").then(function (r) {
      polling = false;
      if (!r.ok) { message(r.data.error || "the server did not answer"); return; }
      setState(r.data);
    }, function () { polling = false; message("lost the connection to the server"); });
  }

  function step(action) {
    if (busy || !S) return;
    busy = true;
    message("");
    document.body.setAttribute("data-busy", "1");
    api("POST", "/api/games/" + S.id + "/step", {action: action}).then(function (r) {
      busy = false;
      document.body.setAttribute("data-busy", "0");
      if (r.ok) { setState(r.data); return; }
      message(r.data.error || ("request failed: " + r.status));
      api("GET", "/api/games/" + S.id).then(function (r2) { if (r2.ok) setState(r2.data); });
    }, function () {
      busy = false;
      document.body.setAttribute("data-busy", "0");
      message("lost the connection to the server");
    });
  }

  document.addEventListener("click", function (e) {
    if (!S) return;
    var el = e.target.closest("[data-action],[data-colour],[data-select-slot]");
    if (!el) return;
    if (el.hasAttribute("data-select-slot")) {
      var k = parseInt(el.getAttribute("data-select-slot"), 10);
      selSlot = selSlot === k ? null : k;
      if (selSlot !== null) selColour = null;
      render();
    } else if (el.hasAttribute("data-colour")) {
      if (!el.classList.contains("legal")) return;
      selColour = parseInt(el.getAttribute("data-colour"), 10);
      selSlot = null;
      render();
    } else {
      e.preventDefault();
      step(parseInt(el.getAttribute("data-action"), 10));
    }
  });
  $("newGame").onclick = function () {
    var box = $("setupBox");
    box.style.display = box.style.display === "none" ? "" : "none";
    if (box.style.display === "") box.scrollIntoView({block: "nearest"});
  };
  $("endTurn").onclick = function () {
    var a = this.getAttribute("data-end");
    if (a !== "") step(parseInt(a, 10));
  };

  api("GET", "/api/config").then(function (r) {
    var opts = '<option value="">none</option>' + r.data.opponents.map(function (o) {
      return '<option value="' + H.esc(o) + '">' + H.esc(o) + "</option>";
    }).join("");
    ["opp0", "opp1", "opp2"].forEach(function (id, k) {
      $(id).innerHTML = opts;
      if (k === 0 && r.data.opponents.length) $(id).value = r.data.opponents[0];
    });
    document.body.setAttribute("data-ready", "1");
  });

  $("setup").onsubmit = function (e) {
    e.preventDefault();
    var opps = ["opp0", "opp1", "opp2"].map(function (id) { return $(id).value; }).filter(function (v) { return v; });
    var seat = Math.min(parseInt($("seat").value, 10), opps.length);
    message("");
    api("POST", "/api/games", {opponents: opps, seat: seat, side: $("side").value, spirits: $("spirits").checked})
      .then(function (r) {
        if (!r.ok) { message(r.data.error); return; }
        selColour = null; selSlot = null;
        TOKEN = r.data.token;
        $("gameArea").style.display = "";
        setState(r.data);
      });
  };
})();
