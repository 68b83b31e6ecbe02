"""The live view in a real browser (Debian's chromium driven by Playwright): run by
tests/live_view.rs against a daemon on the embedded demo with a short `drift_after`.

    live_view.py URL SCREENSHOT

Checks, waiting for each condition (never timing it): the streams table fills and updates
without a reload; choosing a series draws its window with its findings, and the legend's
values and the bias sum to the prediction's score (and that score is the one its class
scores give); the drawing follows new windows; the demo's drift shows up as a drift event of
the errors' detector and a promotion on the models panel; no console error. Saves a
screenshot. Prints one JSON line of what it saw; exits non-zero with the reason otherwise.
"""

import json
import sys

from playwright.sync_api import sync_playwright

URL, SHOT = sys.argv[1], sys.argv[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Generous: these wait for conditions, they do not measure anything.
MINUTE = 60_000
DRIFT_WAIT = 8 * MINUTE


def legend_sums_to_score(page):
    """The drawing's legend: (entries + bias, score, score from the class scores)."""
    return page.evaluate("""() => {
        const num = (s) => Number(s);
        const entries = [...document.querySelectorAll('#legend li.entry')].map(li => num(li.dataset.value));
        const bias = num(document.querySelector('#legend li.bias').dataset.bias);
        const total = document.querySelector('#legend li.total').dataset;
        const box = document.querySelector('#explained').dataset;
        const scores = JSON.parse(box.scores), classes = JSON.parse(box.classes);
        const fromScores = total.single === 'true' ? scores[1]
            : scores[classes.indexOf(total.positive)] - scores[classes.indexOf(total.negative)];
        return {entries, bias, score: num(total.score), fromScores,
                findings: document.querySelectorAll('#legend li.finding').length,
                drawn: document.querySelectorAll('#window-svg path.finding').length,
                values: document.querySelectorAll('#window-svg path.series').length,
                end: box.end};
    }""")


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def main():
    errors = []
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.goto(URL)

        # The streams table fills ...
        page.wait_for_selector("#streams tbody tr[data-kind=window]", timeout=2 * MINUTE)
        seen["rows"] = page.locator("#streams tbody tr").count()
        # ... and updates without a reload: a row's time moves on.
        before = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('#streams tbody tr')].map(t => [t.dataset.key, t.dataset.at]))")
        page.wait_for_function("""(before) => [...document.querySelectorAll('#streams tbody tr')]
            .some(t => before[t.dataset.key] !== undefined && before[t.dataset.key] !== t.dataset.at)""",
                               arg=before, timeout=2 * MINUTE)

        # Choosing a series draws its window and findings.
        # By its key: the table reorders as series are scored.
        key = page.locator("#streams tbody tr[data-kind=window]").nth(1).get_attribute("data-key")
        page.locator(f'#streams tbody tr[data-key="{key}"]').click()
        page.wait_for_function("(k) => document.querySelector('#explained').dataset.key === k "
                               "&& document.querySelectorAll('#legend li.total').length === 1",
                               arg=key, timeout=2 * MINUTE)
        first = legend_sums_to_score(page)
        check_legend(first, key)
        # It follows the series as new windows are scored.
        page.wait_for_function("(end) => document.querySelector('#explained').dataset.end !== end",
                               arg=first["end"], timeout=2 * MINUTE)
        check_legend(legend_sums_to_score(page), key)
        seen["series"] = key
        seen["legend"] = first

        # The demo's drift: a drift of the errors, then a promotion, on the models panel.
        page.wait_for_selector("#events li[data-what=drift][data-detector=errors]", state="attached", timeout=DRIFT_WAIT)
        seen["drift"] = page.locator("#events li[data-what=drift][data-detector=errors]").first.text_content()
        page.wait_for_selector("#events li[data-what=promoted]", state="attached", timeout=DRIFT_WAIT)
        seen["promoted"] = page.locator("#events li[data-what=promoted]").first.text_content()
        page.wait_for_timeout(1500)  # one more panel reading, for the picture
        page.screenshot(path=SHOT, full_page=True)
        browser.close()
    if errors:
        fail("console errors: " + "; ".join(errors))
    print(json.dumps(seen))


def check_legend(x, key):
    if x["findings"] == 0 or x["drawn"] != x["findings"] or x["values"] != 1:
        fail(f"{key}: {x['findings']} findings listed, {x['drawn']} drawn, {x['values']} series lines")
    total = sum(x["entries"]) + x["bias"]
    if not close(total, x["score"]):
        fail(f"{key}: legend entries and bias sum to {total}, the score is {x['score']}: {x}")
    if not close(x["score"], x["fromScores"]):
        fail(f"{key}: the legend's score {x['score']} is not the prediction's {x['fromScores']}")


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
