// Postrun review app: keyboard navigation, bodies loaded on demand, live updates (SSE),
// sessions picked for a bulk verdict. Everything inserted comes from this server's own
// escaped HTML fragments.
"use strict";

(function () {
  var root = document.documentElement;

  // A link's target scrolls to just under the sticky top bar, whatever its height (it wraps
  // on a narrow window): CSS reads the height from here (scroll-padding-top).
  function measureTop() {
    var top = document.querySelector("header.top");
    if (top) { root.style.setProperty("--top-height", (top.offsetHeight + 8) + "px"); }
  }

  function navItems() { return Array.prototype.slice.call(document.querySelectorAll("[data-nav]")); }

  function current() { return document.querySelector("[data-nav].current"); }

  function select(item) {
    var previous = current();
    if (previous) { previous.classList.remove("current"); }
    if (item) {
      item.classList.add("current");
      item.scrollIntoView({ block: "nearest" });
    }
  }

  function move(delta) {
    var items = navItems();
    if (!items.length) { return; }
    var index = items.indexOf(current());
    index = index < 0 ? (delta > 0 ? 0 : items.length - 1) : Math.min(items.length - 1, Math.max(0, index + delta));
    select(items[index]);
  }

  function activate(item) {
    if (item.tagName === "DETAILS") { item.open = !item.open; return; }
    var link = item.querySelector("a.open-link");
    if (link) { window.location.href = link.href; return; }
    var body = item.querySelector("details");
    if (body) { body.open = !body.open; }
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT");
    if (typing) {
      if (target.tagName === "TEXTAREA" && event.key === "Enter" && (event.metaKey || event.ctrlKey)) {
        var good = target.form && target.form.querySelector("button.good");
        if (good) { good.click(); }
      }
      if (event.key === "Escape") { target.blur(); }
      return;
    }
    if (event.metaKey || event.ctrlKey || event.altKey) { return; }
    if (event.key === "j") { move(1); event.preventDefault(); }
    else if (event.key === "k") { move(-1); event.preventDefault(); }
    else if (event.key === "Enter" && current()) { activate(current()); event.preventDefault(); }
    else if (event.key === "x" && current()) {
      var box = current().querySelector("input[type=checkbox][form=bulk]");
      if (box) { box.checked = !box.checked; countSelected(); event.preventDefault(); }
    }
    else if (event.key === "/") {
      var search = document.querySelector("main input[type=search]") || document.querySelector(".quick input");
      if (search) { search.focus(); search.select(); event.preventDefault(); }
    }
  });

  // What the reader opened or closed, by element id: kept across live refreshes and lazy loads.
  var openState = {};

  function applyOpenState(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("details[id]"), function (details) {
      if (Object.prototype.hasOwnProperty.call(openState, details.id)) { details.open = openState[details.id]; }
    });
  }

  function load(details) {
    if (!details.open || details.dataset.loaded === "1" || details.dataset.loading === "1") {
      return Promise.resolve();
    }
    var content = details.querySelector(".body-content");
    details.dataset.loading = "1";
    return fetch(details.dataset.src, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) { throw new Error(response.status + " " + response.statusText); }
      return response.text();
    }).then(function (html) {
      content.innerHTML = html;
      details.dataset.loaded = "1";
      applyOpenState(content);
      return loadOpen(content);
    }).catch(function (error) {
      content.textContent = "could not load: " + error.message;
    }).then(function () { details.dataset.loading = ""; });
  }

  function loadOpen(scope) {
    var opened = scope.querySelectorAll("details[data-src][open]");
    return Promise.all(Array.prototype.map.call(opened, load));
  }

  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches("details")) { return; }
    if (details.id) { openState[details.id] = details.open; }
    if (details.dataset.src) { load(details); }
  }, true);

  function refresh(live) {
    var cached = {};
    Array.prototype.forEach.call(live.querySelectorAll("details[id]"), function (details) {
      openState[details.id] = details.open;  // what the reader sees now, opened by them or by default
      if (details.dataset.loaded === "1") { cached[details.id] = details.querySelector(".body-content").innerHTML; }
    });
    Array.prototype.forEach.call(live.querySelectorAll("section.turn[id]"), function (turn) {
      // A turn shown in full stays open when the session grows and it becomes one that loads on demand.
      if (!Object.prototype.hasOwnProperty.call(openState, turn.id)) { openState[turn.id] = true; }
    });
    var selected = current();
    var selectedId = selected ? selected.id || selected.dataset.session : null;
    var picked = Array.prototype.map.call(live.querySelectorAll("input[form=bulk]:checked"), function (box) {
      return box.value;
    });
    return fetch(live.dataset.liveSrc, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) { throw new Error(String(response.status)); }
      return response.text();
    }).then(function (html) {
      var x = window.scrollX, y = window.scrollY;
      live.innerHTML = html;
      // Parts of the page outside #live that change with it (the inbox's counts) come as
      // <template data-replaces="id">: each replaces the content of the element of that id.
      Array.prototype.forEach.call(live.querySelectorAll("template[data-replaces]"), function (part) {
        var target = document.getElementById(part.dataset.replaces);
        if (target) { target.replaceChildren(part.content.cloneNode(true)); }
        part.remove();
      });
      Array.prototype.forEach.call(live.querySelectorAll("details[id]"), function (details) {
        if (Object.prototype.hasOwnProperty.call(cached, details.id)) {
          // The old content stays on screen while the fresh one loads: no flicker, same height.
          details.querySelector(".body-content").innerHTML = cached[details.id];
        }
      });
      applyOpenState(live);
      Array.prototype.forEach.call(live.querySelectorAll("input[form=bulk]"), function (box) {
        box.checked = picked.indexOf(box.value) >= 0;
      });
      countSelected();
      if (selectedId) {
        select(document.getElementById(selectedId) || live.querySelector('[data-session="' + CSS.escape(selectedId) + '"]'));
      }
      window.scrollTo(x, y);
      root.dataset.liveUpdates = String(Number(root.dataset.liveUpdates || "0") + 1);
      return loadOpen(live);
    });
  }

  function reveal(id) {
    // A step of a big session may sit in a turn that loads on demand: open that turn first.
    var target = document.getElementById(id);
    var seq = /^step-(\d+)$/.exec(id);
    if (!target && seq) {
      var number = Number(seq[1]);
      var turn = Array.prototype.find.call(document.querySelectorAll("details.lazy-turn"), function (details) {
        return Number(details.dataset.first) <= number && number <= Number(details.dataset.last);
      });
      if (turn) {
        turn.open = true;
        openState[turn.id] = true;
        load(turn).then(function () { reveal(id); });
      }
      return;
    }
    if (target) {
      if (target.hasAttribute("data-nav")) { select(target); }
      target.scrollIntoView({ block: "start" });
    }
  }

  function follow(live) {
    if (!window.EventSource || !live.dataset.events) { return; }
    var source = new EventSource(live.dataset.events);
    var busy = false, again = false;
    function update() {
      if (busy) { again = true; return; }
      busy = true;
      refresh(live).catch(function () { /* the next change tries again */ }).then(function () {
        busy = false;
        if (again) { again = false; update(); }
      });
    }
    source.addEventListener("ready", function () { root.dataset.live = "on"; });
    source.addEventListener("change", update);
    source.onerror = function () { root.dataset.live = "retrying"; };
  }

  // The bulk verdict form: how many sessions are picked, and "every session on this page".
  function countSelected() {
    var label = document.querySelector("[data-selected-count]");
    if (!label) { return; }
    var count = document.querySelectorAll("input[form=bulk]:checked").length;
    label.textContent = count === 1 ? "1 session selected:" : count + " sessions selected:";
    Array.prototype.forEach.call(document.querySelectorAll("#bulk button"), function (button) {
      button.disabled = count === 0;
    });
    var all = document.querySelector("[data-select-all]");
    var boxes = document.querySelectorAll("input[form=bulk]");
    if (all) { all.checked = boxes.length > 0 && count === boxes.length; }
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches && target.matches("[data-select-all]")) {
      Array.prototype.forEach.call(document.querySelectorAll("input[form=bulk]"), function (box) {
        box.checked = target.checked;
      });
    }
    if (target.matches && target.matches("input[type=checkbox]")) { countSelected(); }
  });

  // A click on a link to a step here (#step-N) selects that step, as j/k would.
  window.addEventListener("hashchange", function () {
    if (window.location.hash) { reveal(window.location.hash.slice(1)); }
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href^='#']");
    if (link && link.getAttribute("href") === window.location.hash) { reveal(window.location.hash.slice(1)); }
  });

  window.addEventListener("resize", measureTop);

  document.addEventListener("DOMContentLoaded", function () {
    measureTop();
    countSelected();
    loadOpen(document);
    var live = document.getElementById("live");
    if (live) { follow(live); }
    if (window.location.hash) { reveal(window.location.hash.slice(1)); }
  });
})();
