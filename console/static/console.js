// Auto-refresh for the overview and live pages: reloads every
// data-refresh seconds while the box is ticked and the tab is visible.
// The pages read the same without it.
(function () {
  var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var box = document.getElementById("autorefresh");
  if (!secs || !box) { return; }
  // Rendered hidden and unticked: without JavaScript nothing refreshes, so
  // the box must not claim it does. Shown and ticked (unless turned off
  // before) here.
  var key = "ackgap-console-autorefresh";
  box.checked = true;
  try { if (localStorage.getItem(key) === "off") { box.checked = false; } } catch (e) {}
  var label = document.getElementById("autorefresh-label");
  if (label) { label.hidden = false; }
  box.addEventListener("change", function () {
    try { localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) {}
  });
  setInterval(function () {
    if (box.checked && document.visibilityState === "visible") { location.reload(); }
  }, secs * 1000);
})();
