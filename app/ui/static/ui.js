// Forms marked data-json are sent as JSON (the service accepts no other body), then the
// browser goes to data-next; a refusal shows the service's own reason in the form.
"use strict";
for (const form of document.querySelectorAll("form[data-json]")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = form.querySelector(".error");
    const body = Object.fromEntries(new FormData(form));
    let answer;
    try {
      answer = await fetch(form.action, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        credentials: "same-origin",
      });
    } catch (failure) {
      answer = null;
    }
    if (answer && answer.ok) {
      window.location.assign(form.dataset.next);
      return;
    }
    let reason = "The service could not be reached.";
    if (answer) {
      try {
        reason = (await answer.json()).detail || answer.statusText;
      } catch (failure) {
        reason = `${answer.status} ${answer.statusText}`;
      }
    }
    if (error) {
      error.textContent = reason;
      error.hidden = false;
    }
  });
}
