// deidweb's only script besides htmx (CSP: no inline script anywhere).
// A job's progress fragment marks itself with data-reload-page once the job has finished and
// the page around it shows the result: reload the page after htmx has put that final state on
// screen, so a slow page never leaves the old state showing in the meantime.
document.addEventListener("htmx:afterSettle", function () {
  if (document.querySelector("[data-reload-page]")) {
    window.location.reload();
  }
});
