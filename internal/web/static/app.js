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
  function update() {
    var now = Date.now();
    document.querySelectorAll("time.ago[datetime]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(t)) el.textContent = relative(t - now);
    });
  }
  update();
  setInterval(update, 60000);
})();
