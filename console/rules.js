// The rules playground: loads the rules in force (GET /console/api/rules) and simulates a request with
// POST /console/api/rules/explain, showing the decision and the explain trace.

import { call } from "./api.js";
import { $, announce, clear, el } from "./dom.js";
import { currentBucket } from "./browser.js";

async function loadRules() {
  try {
    const rules = await call("GET", "/console/api/rules");
    $("rules-source").value = rules.loaded ? rules.source : "";
    announce(rules.loaded ? `Loaded ${rules.fileName}.` : "No rules are loaded: this server allows everything.");
  } catch (error) {
    announce(`Could not load the rules: ${error.message}`, true);
  }
}

function showResult(result) {
  $("sim-result").hidden = false;
  const decision = $("sim-decision");
  decision.textContent = result.allowed ? "Allowed" : "Denied";
  decision.className = `decision ${result.allowed ? "allowed" : "denied"}`;
  $("sim-reason").textContent = result.reason;
  const trace = clear($("sim-trace"));
  result.steps.forEach((step, index) => {
    const deciding = index === result.decidingStep;
    trace.append(
      el(
        "li",
        {
          // Nesting as a class: the policy allows no inline style.
          class: `depth-${Math.min(step.depth, 6)}${deciding ? " deciding" : ""}`,
          dataset: { kind: step.kind, outcome: step.outcome },
        },
        `line ${step.line}: `,
        el("code", {}, step.statement),
        " — ",
        el("span", { class: `outcome ${step.outcome}` }, step.outcome),
        step.detail ? ` (${step.detail})` : "",
        deciding ? el("strong", {}, " ← decided") : "",
      ),
    );
  });
  for (const line of result.debug || []) trace.append(el("li", {}, `debug: ${line}`));
  if (result.truncated) trace.append(el("li", {}, "… more statements were tried than are shown"));
  $("sim-result").scrollIntoView({ block: "start" });
}

async function simulate(event) {
  event.preventDefault();
  let claims;
  try {
    claims = JSON.parse($("sim-claims").value || "{}");
    if (claims === null || typeof claims !== "object" || Array.isArray(claims)) throw new Error("not an object");
  } catch (error) {
    announce(`Token claims must be a JSON object (${error.message}).`, true);
    $("sim-claims").focus();
    return;
  }
  const uid = $("sim-uid").value.trim();
  const body = {
    operation: $("sim-operation").value,
    bucket: $("sim-bucket").value.trim(),
    path: $("sim-path").value,
    auth: uid ? { uid, token: claims } : null,
  };
  const contentType = $("sim-content-type").value.trim();
  if (contentType) body.contentType = contentType;
  const size = $("sim-size").value.trim();
  if (size) body.size = Number(size);
  if ($("rules-draft").checked) body.rules = $("rules-source").value;
  try {
    showResult(await call("POST", "/console/api/rules/explain", { body }));
  } catch (error) {
    $("sim-result").hidden = false;
    $("sim-decision").textContent = "Not simulated";
    $("sim-decision").className = "decision";
    $("sim-reason").textContent = error.message;
    clear($("sim-trace"));
  }
}

export function initRules() {
  $("rules-load").addEventListener("click", loadRules);
  $("simulate-form").addEventListener("submit", simulate);
  $("tab-rules").addEventListener("click", () => {
    if (!$("sim-bucket").value && currentBucket()) $("sim-bucket").value = currentBucket();
    if (!$("rules-source").value) loadRules();
  });
}
