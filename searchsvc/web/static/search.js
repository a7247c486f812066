// Progressive enhancement only: every feature works as a plain GET form without this file.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function submitFormOf(control) {
    var form = control.form;
    if (!form) return;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  // Empty fields (`year_from=`) would only clutter the shareable URL: leave them out.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    Array.prototype.forEach.call(form.elements, function (control) {
      if (control.name && control.type !== "checkbox" && control.value === "" && !control.disabled) {
        control.disabled = true;
        control.setAttribute("data-was-empty", "");
      }
    });
  });

  // Auto-submitting reloads the page; keyboard users should land back on the control they used.
  var FOCUS_KEY = "searchsvc:refocus";

  document.addEventListener("change", function (event) {
    var control = event.target;
    if (!(control.hasAttribute && control.hasAttribute("data-autosubmit"))) return;
    try {
      sessionStorage.setItem(FOCUS_KEY, JSON.stringify({
        name: control.name,
        value: control.type === "checkbox" ? control.value : null
      }));
    } catch (e) { /* storage may be disabled: focus simply starts at the top */ }
    submitFormOf(control);
  });

  function takeRefocusTarget() {
    var saved;
    try {
      saved = JSON.parse(sessionStorage.getItem(FOCUS_KEY) || "null");
      sessionStorage.removeItem(FOCUS_KEY);
    } catch (e) { return null; }
    if (!saved) return null;
    var candidates = document.querySelectorAll("[data-autosubmit]");
    for (var i = 0; i < candidates.length; i++) {
      var control = candidates[i];
      if (control.name === saved.name && (saved.value === null || control.value === saved.value)) {
        return control;
      }
    }
    return null;
  }

  // Back/Forward must show the state of the URL, not what was ticked just before leaving:
  // restore every control to what the server rendered for this URL.
  window.addEventListener("pageshow", function (event) {
    var navigation = window.performance && performance.getEntriesByType
      ? performance.getEntriesByType("navigation")[0] : null;
    var fromHistory = event.persisted || (navigation && navigation.type === "back_forward");
    if (!fromHistory) return;
    Array.prototype.forEach.call(document.forms, function (form) {
      form.reset();
      Array.prototype.forEach.call(form.elements, function (control) {
        if (control.hasAttribute("data-was-empty")) {
          control.disabled = false;
          control.removeAttribute("data-was-empty");
        }
      });
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    var target = takeRefocusTarget();
    var panels = document.querySelectorAll("details[data-fold-when-narrow]");
    var narrow = window.matchMedia ? window.matchMedia("(max-width: 52rem)") : null;
    if (narrow && narrow.matches) {
      panels.forEach(function (panel) {
        if (!(target && panel.contains(target))) panel.open = false;
      });
    }
    // Wide screens have no toggle to open a folded panel (a rotated tablet): unfold it.
    if (narrow && narrow.addEventListener) {
      narrow.addEventListener("change", function () {
        if (!narrow.matches) panels.forEach(function (panel) { panel.open = true; });
      });
    }
    // The box just unticked may sit in a subject group that now starts closed: reopen it.
    for (var node = target && target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS" && !node.hasAttribute("data-fold-when-narrow")) node.open = true;
    }
    if (target && target.offsetParent !== null) target.focus();
  });
})();
