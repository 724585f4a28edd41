/* Harmonies table drawing, shared by the replay viewer (inlined) and the play page (served).
 *
 * Every function turns plain data into SVG/HTML markup strings:
 *   st    = static facts of a game (harmonies_apps.table.static_data): cells, colours, stacks, cards
 *   frame = the public table at one moment (harmonies_apps.table.table_state)
 * Boards are flat-top hexes placed by axial (q, r): x = 1.5 q R, y = sqrt(3) (r + q/2) R, as in
 * harmonies_env.render_image. Clickable things carry data-action="<action index>" and the class "legal".
 */
(function (global) {
  "use strict";
  var SQ3 = Math.sqrt(3);
  var SEAT = ["#3478c6", "#c82e26", "#3a923e", "#b07d10"];
  var LABEL_STACK = {
    blue: ["blue"], yellow: ["yellow"], tree1: ["green"], tree2: ["brown", "green"],
    tree3: ["brown", "brown", "green"], mountain1: ["gray"], mountain2: ["gray", "gray"],
    mountain3: ["gray", "gray", "gray"], building: ["gray", "red"]
  };
  var CAT_LABEL = {trees: "Trees", mountains: "Mountains", fields: "Fields", buildings: "Buildings",
    water: "Water", animals: "Animals", spirit: "Spirit", total: "Total"};

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function f1(x) { return Math.round(x * 10) / 10; }
  function hexPts(cx, cy, r) {
    var p = [];
    for (var k = 0; k < 6; k++) {
      p.push(f1(cx + r * Math.cos(Math.PI / 3 * k)) + "," + f1(cy + r * Math.sin(Math.PI / 3 * k)));
    }
    return p.join(" ");
  }
  function colourOf(st, name) { return st.rgb[st.colours.indexOf(name)]; }

  /* One stack of tokens (bottom -> top colour names) drawn in a hex of radius R: top colour inside, a ring of
     the bottom colour when it differs (tree on trunks, building), a house outline on buildings, pips for the
     height, and a white square for a cube. */
  function stackSVG(st, cx, cy, R, colours, cube) {
    var out = [];
    var lw = R >= 16 ? 1.5 : 1;
    if (!colours.length) {
      out.push('<polygon points="' + hexPts(cx, cy, R) + '" fill="' + st.empty_rgb + '" stroke="#605446" stroke-width="' + lw + '"/>');
    } else {
      var top = colourOf(st, colours[colours.length - 1]);
      var base = colourOf(st, colours[0]);
      var building = colours.length === 2 && colours[1] === "red";
      if (colours[0] !== colours[colours.length - 1] || building) {
        out.push('<polygon points="' + hexPts(cx, cy, R) + '" fill="' + base + '" stroke="#605446" stroke-width="' + lw + '"/>');
        out.push('<polygon points="' + hexPts(cx, cy, 0.66 * R) + '" fill="' + top + '" stroke="#281e14" stroke-width="1"/>');
      } else {
        out.push('<polygon points="' + hexPts(cx, cy, R) + '" fill="' + top + '" stroke="#605446" stroke-width="' + lw + '"/>');
      }
      if (building && R >= 9) {
        var k = 0.27 * R;
        out.push('<polyline points="' + [[cx - k, cy + 0.75 * k], [cx - k, cy - 0.15 * k], [cx, cy - k], [cx + k, cy - 0.15 * k],
          [cx + k, cy + 0.75 * k], [cx - k, cy + 0.75 * k]].map(function (q) { return f1(q[0]) + "," + f1(q[1]); }).join(" ") +
          '" fill="none" stroke="#fff" stroke-width="' + f1(Math.max(1, R / 12)) + '" stroke-linejoin="round"/>');
      }
      var h = colours.length;
      if (R >= 10) {
        var pr = Math.max(1.5, 0.11 * R), step = 2.7 * pr;
        for (var i = 0; i < h; i++) {
          out.push('<circle cx="' + f1(cx + (i - (h - 1) / 2) * step) + '" cy="' + f1(cy + 0.52 * R) + '" r="' + f1(pr) +
            '" fill="#141414" stroke="#fff" stroke-width="0.8"/>');
        }
      }
    }
    if (cube) {
      var c = Math.max(2, 0.17 * R), y2 = cy - 0.52 * R;
      out.push('<rect class="cube" x="' + f1(cx - c) + '" y="' + f1(y2 - c) + '" width="' + f1(2 * c) + '" height="' +
        f1(2 * c) + '" fill="#fff" stroke="#000" stroke-width="' + f1(Math.max(1, R / 16)) + '"/>');
    }
    return out.join("");
  }

  function boardBox(st, R) {
    var x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
    st.cells.forEach(function (c) {
      var x = 1.5 * c[0] * R, y = SQ3 * (c[1] + c[0] / 2) * R;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    });
    return [x0 - R - 2, y0 - SQ3 * R / 2 - 2, x1 - x0 + 2 * R + 4, y1 - y0 + SQ3 * R + 4];
  }

  /* A player's board. opts.legal: {cell: action} clickable cells; opts.last: a cell (or a list of cells) to mark as
     just changed. */
  function boardSVG(st, frame, p, opts) {
    opts = opts || {};
    var R = opts.R || 27;
    var pl = frame.players[p];
    var cubes = {}, marked = {};
    pl.cubes.forEach(function (i) { cubes[i] = true; });
    [].concat(opts.last === null || opts.last === undefined ? [] : opts.last).forEach(function (i) { marked[i] = true; });
    var b = boardBox(st, R);
    var out = ['<svg class="board" data-player="' + p + '" xmlns="http://www.w3.org/2000/svg" width="' + f1(b[2]) + '" height="' + f1(b[3]) +
      '" viewBox="' + [b[0], b[1], b[2], b[3]].map(f1).join(" ") + '">'];
    st.cells.forEach(function (qr, i) {
      var cx = 1.5 * qr[0] * R, cy = SQ3 * (qr[1] + qr[0] / 2) * R;
      var code = pl.stacks[i];
      var legal = opts.legal && opts.legal[i] !== undefined;
      var cls = "cell" + (legal ? " legal" : "") + (marked[i] ? " last" : "");
      out.push('<g class="' + cls + '" data-cell="' + i + '" data-height="' + st.stacks[code].length + '" data-cube="' +
        (cubes[i] ? 1 : 0) + '"' + (legal ? ' data-action="' + opts.legal[i] + '"' : "") + '>');
      out.push('<title>cell ' + i + ' (q=' + qr[0] + ', r=' + qr[1] + '): ' + esc(st.stack_kinds[code]) +
        (cubes[i] ? ", cube" : "") + '</title>');
      out.push(stackSVG(st, cx, cy, R, st.stacks[code], !!cubes[i]));
      out.push('<text class="cidx" x="' + f1(cx - 0.72 * R) + '" y="' + f1(cy + 3) + '">' + i + '</text>');
      if (legal) out.push('<polygon class="hl" points="' + hexPts(cx, cy, R - 2.5) + '"/>');
      if (marked[i]) out.push('<polygon class="lastmark" points="' + hexPts(cx, cy, R - 2) + '"/>');
      out.push('</g>');
    });
    out.push('</svg>');
    return out.join("");
  }

  /* A card's habitat picture: the pattern in small hexes, the cube's cell marked. */
  function patternSVG(st, card, R) {
    R = R || 9;
    var pts = card.pattern.map(function (c) { return [1.5 * c[0] * R, SQ3 * (c[1] + c[0] / 2) * R]; });
    var x0 = Math.min.apply(null, pts.map(function (p) { return p[0]; })) - R - 1;
    var x1 = Math.max.apply(null, pts.map(function (p) { return p[0]; })) + R + 1;
    var y0 = Math.min.apply(null, pts.map(function (p) { return p[1]; })) - SQ3 * R / 2 - 1;
    var y1 = Math.max.apply(null, pts.map(function (p) { return p[1]; })) + SQ3 * R / 2 + 1;
    var out = ['<svg class="pattern" xmlns="http://www.w3.org/2000/svg" width="' + f1(x1 - x0) + '" height="' + f1(y1 - y0) +
      '" viewBox="' + [x0, y0, x1 - x0, y1 - y0].map(f1).join(" ") + '">'];
    card.pattern.forEach(function (c, k) {
      var isCube = c[0] === card.cube[0] && c[1] === card.cube[1];
      out.push(stackSVG(st, pts[k][0], pts[k][1], R, LABEL_STACK[c[2]], isCube));
    });
    out.push("</svg>");
    return out.join("");
  }

  /* A card. opts: placed (cubes moved to the board), action (clickable: steps that action), clickable + attr (clickable
     with custom data attributes), selected, extra (HTML under the text), cls (extra classes), slot (data-slot). */
  function cardHTML(st, id, opts) {
    opts = opts || {};
    var hasAction = opts.action !== undefined && opts.action !== null;
    var cls = "card" + (opts.cls ? " " + opts.cls : "") + (hasAction || opts.clickable ? " legal" : "") +
      (opts.selected ? " selected" : "");
    var attrs = (hasAction ? ' data-action="' + opts.action + '"' : "") + (opts.attr || "") +
      (opts.slot !== undefined ? ' data-slot="' + opts.slot + '"' : "") + ' data-card="' + id + '"';
    if (id < 0) return '<div class="' + cls + ' empty"' + attrs + '>(empty slot)</div>';
    var c = st.cards[String(id)];
    if (c.spirit) cls += " spirit";
    var txt = '<div class="name" title="' + esc(c.name + (c.spirit ? " Spirit" : "")) + '">' + esc(c.name) +
      (c.spirit ? ' <span class="sub">Spirit</span>' : "") + '</div>';
    if (c.points) {
      var placed = opts.placed || 0;
      txt += '<div class="pts" title="points once 1, 2, ... cubes are on the board">' + c.points.map(function (v, k) {
        return '<span class="pt' + (k < placed ? " got" : "") + '">' + v + "</span>";
      }).join("") + "</div>";
    } else {
      txt += '<div class="rule" title="' + esc(c.rule) + '">' + esc(c.short) + "</div>";
    }
    if (opts.extra) txt += opts.extra;
    return '<div class="' + cls + '"' + attrs + ' title="' + esc(c.name) + '"><div class="txt">' + txt + '</div>' +
      patternSVG(st, c, opts.small ? 7.5 : 9) + "</div>";
  }

  function tokenSVG(st, c, r) {
    r = r || 10;
    var d = 2 * r + 4;
    if (c < 0) return '<svg width="' + d + '" height="' + d + '"><circle cx="' + (r + 2) + '" cy="' + (r + 2) + '" r="' + r +
      '" fill="none" stroke="#bfb39b" stroke-dasharray="3 2"/></svg>';
    return '<svg width="' + d + '" height="' + d + '"><circle cx="' + (r + 2) + '" cy="' + (r + 2) + '" r="' + r + '" fill="' +
      st.rgb[c] + '" stroke="#5c5040" stroke-width="1.2"><title>' + st.colours[c] + '</title></circle></svg>';
  }

  /* The central board. opts.legal: {space: action}. */
  function centralHTML(st, frame, opts) {
    opts = opts || {};
    return '<div class="central">' + frame.central.map(function (sp, k) {
      var legal = opts.legal && opts.legal[k] !== undefined;
      var taken = frame.taken_space === k;
      return '<div class="space' + (legal ? " legal" : "") + (taken ? " taken" : "") + '" data-space="' + k + '"' +
        (legal ? ' data-action="' + opts.legal[k] + '"' : "") + '><div class="idx">space ' + k + '</div><div class="tokens">' +
        sp.map(function (c) { return tokenSVG(st, c, 10); }).join("") + "</div></div>";
    }).join("") + "</div>";
  }

  function pouchHTML(st, frame) {
    var total = frame.pouch.reduce(function (a, b) { return a + b; }, 0);
    return '<div class="pouch" data-pouch="' + total + '">' + frame.pouch.map(function (n, c) {
      return '<span title="' + st.colours[c] + ' tokens in the pouch">' + tokenSVG(st, c, 7) + '<span class="n">' + n + "</span></span>";
    }).join("") + '</div><div class="sub">pouch <b>' + total + '</b> tokens &middot; draw pile <b>' + frame.deck_count +
      "</b> cards</div>";
  }

  /* Tokens taken this turn and not yet placed. opts.legal: {colour: true}, opts.selected: colour. */
  function handHTML(st, frame, opts) {
    opts = opts || {};
    var out = [];
    frame.hand.forEach(function (n, c) {
      for (var k = 0; k < n; k++) {
        var legal = opts.legal && opts.legal[c];
        out.push('<span class="tok' + (legal ? " legal" : "") + (opts.selected === c ? " selected" : "") + '" data-colour="' + c +
          '" title="' + st.colours[c] + '">' + tokenSVG(st, c, 11) + "</span>");
      }
    });
    return '<div class="hand">' + (out.length ? out.join("") : '<span class="help">no tokens in hand</span>') + "</div>";
  }

  function catLabel(st, k) { return k === "water" ? (st.water_label === "water" ? "Water" : "Islands") : CAT_LABEL[k]; }

  function scoreTable(st, frame, names) {
    var cats = st.categories.filter(function (k) { return k !== "spirit" || frame.spirits; });
    var out = ['<table class="scores"><thead><tr><th></th>'];
    names.forEach(function (nm, p) {
      out.push('<th style="color:' + SEAT[p] + '">' + esc(nm) + "</th>");
    });
    out.push("</tr></thead><tbody>");
    cats.forEach(function (k) {
      out.push('<tr class="' + (k === "total" ? "total" : "") + '"><td>' + catLabel(st, k) + "</td>");
      frame.players.forEach(function (pl, p) {
        out.push('<td data-player="' + p + '" data-cat="' + k + '">' + pl.scores[k] + "</td>");
      });
      out.push("</tr>");
    });
    out.push("</tbody></table>");
    return out.join("");
  }

  /* Score over turns: series[p] = [[x, total], ...]; cursor = x of the current frame (a vertical line). */
  function chartSVG(series, names, cursor, xmax, xlabel) {
    var W = 460, H = 180, L = 34, B = 22, T = 8, Rm = 10;
    var ymax = 10;
    series.forEach(function (s) { s.forEach(function (pt) { ymax = Math.max(ymax, pt[1]); }); });
    ymax = Math.ceil(ymax / 20) * 20;
    xmax = Math.max(1, xmax);
    function X(x) { return L + (W - L - Rm) * x / xmax; }
    function Y(y) { return T + (H - T - B) * (1 - y / ymax); }
    var out = ['<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '">'];
    for (var y = 0; y <= ymax; y += ymax / 4) {
      out.push('<line x1="' + L + '" x2="' + (W - Rm) + '" y1="' + f1(Y(y)) + '" y2="' + f1(Y(y)) + '" stroke="#eee6d6"/>');
      out.push('<text x="' + (L - 4) + '" y="' + f1(Y(y) + 3) + '" text-anchor="end">' + y + "</text>");
    }
    out.push('<line x1="' + L + '" x2="' + (W - Rm) + '" y1="' + f1(Y(0)) + '" y2="' + f1(Y(0)) + '" stroke="#999"/>');
    out.push('<text x="' + (W - Rm) + '" y="' + (H - 6) + '" text-anchor="end">' + esc(xlabel || "turn") + " " + xmax + "</text>");
    out.push('<text x="' + L + '" y="' + (H - 6) + '">0</text>');
    series.forEach(function (s, p) {
      if (!s.length) return;
      out.push('<polyline fill="none" stroke="' + SEAT[p] + '" stroke-width="2.2" points="' +
        s.map(function (pt) { return f1(X(pt[0])) + "," + f1(Y(pt[1])); }).join(" ") + '"/>');
    });
    if (cursor !== null && cursor !== undefined) {
      out.push('<line x1="' + f1(X(cursor)) + '" x2="' + f1(X(cursor)) + '" y1="' + T + '" y2="' + f1(Y(0)) +
        '" stroke="#d35400" stroke-dasharray="3 3"/>');
    }
    out.push("</svg>");
    var legend = '<div class="legend">' + names.map(function (nm, p) {
      return '<span><i style="background:' + SEAT[p] + '"></i>' + esc(nm) + "</span>";
    }).join("") + "</div>";
    return out.join("") + legend;
  }

  /* One seat's panel: name, total, board, score breakdown, held / completed / Spirit cards.
     opts: legalCells {cell: action}, last (cell or cells just changed), heldSelect {slot: true} (cards that can place a cube), selectedSlot,
     dealtActions {j: action}, you (bool). */
  function playerPanel(st, frame, p, names, opts) {
    opts = opts || {};
    var pl = frame.players[p];
    var mover = !frame.over && frame.current === p;
    var winner = frame.over && frame.winners.indexOf(p) >= 0 && frame.num_players > 1;
    var out = ['<section class="panel' + (mover ? " mover" : "") + (winner ? " winner" : "") + '" data-player="' + p + '">'];
    out.push('<div class="head"><span class="nm" style="color:' + SEAT[p] + '">' + esc(names[p]) + "</span>" +
      (opts.you ? '<span class="help">(you)</span>' : "") +
      (mover ? '<span class="tag mv">to move</span>' : "") + (winner ? '<span class="tag wn">winner</span>' : "") +
      '<span class="total" data-total="' + p + '">' + pl.scores.total + " pts</span></div>");
    out.push('<div class="body"><div>' + boardSVG(st, frame, p, {legal: opts.legalCells, last: opts.last}) + "</div>");
    out.push('<div class="side"><div class="cats">');
    st.categories.forEach(function (k) {
      if (k === "total" || (k === "spirit" && !frame.spirits)) return;
      out.push("<span>" + catLabel(st, k) + "</span><b>" + pl.scores[k] + "</b>");
    });
    out.push('<span>Animal cubes placed</span><b>' + pl.animal_cubes + "</b></div>");
    out.push('<div class="lbl">Held cards (' + pl.held.length + '/4)</div><div class="cardlist">');
    if (!pl.held.length) out.push('<span class="help">none</span>');
    pl.held.forEach(function (h, slotIdx) {
      var sel = !!(opts.heldSelect && opts.heldSelect[slotIdx]);
      out.push(cardHTML(st, h[0], {placed: h[1], cls: "small held", small: true, slot: slotIdx, clickable: sel,
        attr: sel ? ' data-select-slot="' + slotIdx + '"' : "", selected: opts.selectedSlot === slotIdx,
        extra: '<div class="sub">' + (h[2] - h[1]) + " cube" + (h[2] - h[1] === 1 ? "" : "s") + " left</div>"}));
    });
    out.push("</div>");
    if (pl.done.length) {
      out.push('<div class="lbl">Completed</div><div class="cardlist">');
      pl.done.forEach(function (c) {
        var card = st.cards[String(c)];
        out.push(cardHTML(st, c, {placed: card.points.length, cls: "small done", small: true}));
      });
      out.push("</div>");
    }
    if (frame.spirits) {
      if (pl.spirit >= 0 && pl.spirit_placed) {
        out.push('<div class="lbl">Spirit (cube placed)</div><div class="cardlist">' +
          cardHTML(st, pl.spirit, {cls: "small", small: true}) + "</div>");
      } else if (pl.spirit < 0 && pl.dealt) {
        out.push('<div class="lbl">Dealt Spirits: keep one</div><div class="cardlist">');
        pl.dealt.forEach(function (c, j) {
          out.push(cardHTML(st, c, {cls: "small dealt", small: true, action: opts.dealtActions ? opts.dealtActions[j] : undefined}));
        });
        out.push("</div>");
      } else if (pl.spirit < 0) {
        out.push('<div class="lbl">Spirit: not chosen yet</div>');
      }
    }
    out.push("</div></div></section>");
    return out.join("");
  }

  /* The board cell an action changes (token or cube placement), or null. */
  function cellOf(action) {
    if (action >= 5 && action < 155) return (action - 5) % 25;
    if (action >= 160 && action < 260) return (action - 160) % 25;
    return null;
  }

  function statusHTML(frame, names) {
    if (frame.over) {
      if (frame.num_players === 1) {
        return '<span class="over">Game over: ' + frame.players[0].scores.total + " points, " + frame.suns + " suns</span>";
      }
      var w = frame.winners.map(function (p) { return esc(names[p]) + " (" + frame.players[p].scores.total + ")"; });
      return '<span class="over">Game over: ' + (w.length > 1 ? "shared victory: " : "winner: ") + w.join(", ") + "</span>";
    }
    var s = "Round " + frame.round + ", turn " + (frame.turn + 1) + ' &middot; <span class="mover">' + esc(names[frame.current]) + " to move</span>";
    if (frame.end_trigger) s += ' &middot; final round (' + (frame.end_trigger === 1 ? "the pouch ran out" : "a board is full") + ")";
    return s;
  }

  global.H = {
    SEAT: SEAT, esc: esc, boardSVG: boardSVG, stackSVG: stackSVG, patternSVG: patternSVG, cardHTML: cardHTML,
    tokenSVG: tokenSVG, centralHTML: centralHTML, pouchHTML: pouchHTML, handHTML: handHTML, scoreTable: scoreTable,
    chartSVG: chartSVG, playerPanel: playerPanel, statusHTML: statusHTML, cellOf: cellOf
  };
})(typeof window !== "undefined" ? window : this);
