// Auto-refresh for the overview and live pages: reloads every
// data-refresh seconds while the box is ticked and the tab is visible.
// The pages read the same without it.
(function () {
  var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var box = document.getElementById("autorefresh");
  if (!secs || !box) { return; }
  var key = "ackgap-console-autorefresh";
  try { if (localStorage.getItem(key) === "off") { box.checked = false; } } catch (e) {}
  box.addEventListener("change", function () {
    try { localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) {}
  });
  setInterval(function () {
    if (box.checked && document.visibilityState === "visible") { location.reload(); }
  }, secs * 1000);
})();
