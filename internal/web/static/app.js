// Munin needs no script to work; this only asks before destructive forms.
document.addEventListener("submit", function (e) {
  var msg = e.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) e.preventDefault();
});

// A project page listens to its project's live stream (server-sent events)
// and says how many changes were made since it was loaded, with a link that
// reloads it. The notice is a polite live region: a screen reader reads it
// out when it changes, without interrupting. An EventSource reconnects by
// itself with the id of the last event it got, so no change is missed
// across a dropped connection or a resync.
(function () {
  var live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  var count = 0;
  var source = new EventSource(live.getAttribute("data-stream"));
  source.addEventListener("change", function (e) {
    var c;
    try { c = JSON.parse(e.data); } catch (err) { return; }
    count++;
    live.textContent = count + (count === 1 ? " new change" : " new changes") +
      " (latest: " + c.agent + " " + c.kind + " " + c.slug + (c.version ? " v" + c.version : "") + ") — ";
    var a = document.createElement("a");
    a.id = "live-reload";
    a.href = window.location.href;
    a.textContent = "reload";
    live.appendChild(a);
  });
  // The stream ends for good (the session ended, the key was revoked): stop
  // trying; a reload shows why.
  source.addEventListener("failure", function () { source.close(); });
})();

// Times: the server writes each as the exact UTC time in a <time> element
// (render.go, timeElement); here it reads relative ("5 min ago", "in 2
// days") with the exact time kept as the hover title. Refreshed each
// minute, so an open page stays right.
(function () {
  if (!window.Intl || !Intl.RelativeTimeFormat) return;
  var fmt = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
  var steps = [["second", 60], ["minute", 60], ["hour", 24], ["day", 30], ["month", 12], ["year", Infinity]];
  function relative(ms) {
    var v = ms / 1000;
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(v) < steps[i][1]) return fmt.format(Math.round(v), steps[i][0]);
      v /= steps[i][1];
    }
  }
  // In the logs (a cell marked exact-too) the exact time stays visible
  // beside the relative one: events within a minute are ordered by it, and
  // a touch screen has no hover.
  function keepExact(el) {
    if (!el.parentNode.classList.contains("exact-too") || el.nextElementSibling) return;
    var exact = document.createElement("span");
    exact.className = "exact";
    exact.textContent = el.getAttribute("title");
    el.parentNode.appendChild(exact);
  }
  function update() {
    var now = Date.now();
    document.querySelectorAll("time.ago[datetime]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (isNaN(t)) return;
      el.textContent = relative(t - now);
      keepExact(el);
    });
  }
  update();
  setInterval(update, 60000);
})();

// Copy buttons (the keys page's new key and client configuration): shown
// only with script, as without it there is nothing to click — the text is
// there to select. The clipboard API needs a secure context (https or
// localhost) and may be refused; then the text is selected instead, for
// Ctrl+C. The outcome is said in a status region for screen readers.
(function () {
  var status = document.getElementById("copy-status");
  function say(msg) { if (status) status.textContent = msg; }
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var what = button.textContent.replace(/^Copy /, "");
      var fallback = function () {
        select(source);
        say("Selected the " + what + ": press Ctrl+C (⌘C) to copy it.");
      };
      if (!navigator.clipboard || !window.isSecureContext) { fallback(); return; }
      navigator.clipboard.writeText(source.textContent).then(function () {
        say("Copied the " + what + " to the clipboard.");
        button.classList.add("copied");
      }, fallback);
    });
  });
})();
