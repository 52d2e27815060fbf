"""The robotmem web console in headless chromium (run by scripts/browser-test.sh).

Fills a database with the robotmem command, serves it with `robotmem web` on
127.0.0.1, and drives the page: dashboard numbers, search (mode and scores), a
memory's detail with its force trace plotted, forget with a reason, purge, a session's
timeline, and memories holding markup shown as text (no alert, no element made
from them). Saves a screenshot of each view under $OUT.
"""

import datetime
import json
import math
import os
import re
import urllib.parse
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BIN = os.environ["ROBOTMEM_BIN"]
WORK = os.environ["WORK"]
OUT = os.environ["OUT"]
DB = os.path.join(WORK, "console.db")
XSS = ['<img src=x onerror="window.pwned=1">gripper slipped on the wet cup at 3N',
       '<script>window.pwned=2</script> lidar blind spot near the glass door']


def cli(*args, stdin=None):
    r = subprocess.run([BIN, "--db", DB, "--no-embeddings", "--durability", "normal", "--json", *args],
                       input=stdin, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"robotmem {' '.join(args)} failed: {r.stderr}")
    return json.loads(r.stdout)


def fill():
    for i in range(1, 41):
        ok = "true" if i % 4 else "false"
        cli("learn", f"grasp {i} of the red cup at {i}.5N in cell {i % 3}",
            "--context", f'{{"task": {{"success": {ok}}}, "spatial": {{"pos": [{i}, 0, 0]}}}}')
    for text in XSS:
        cli("learn", text, "--context", '{"task": {"success": false}, "note": "<b>bold?</b>"}', "--tag", "<i>tag</i>")
    session = cli("session", "start", "--context", '{"robot": {"id": "arm-7"}, "task": {"name": "shelf-push"}}')["session_id"]
    cli("learn", "approached the shelf from the left side", "--session", session)
    cli("learn", "pushed the box 0.3 m toward the wall", "--session", session,
        "--context", '{"robot": {"id": "arm-7"}, "task": {"name": "shelf-push", "success": false}}')
    cli("session", "end", session, "--outcome", "0.6")
    trace = os.path.join(WORK, "trace.json")
    with open(trace, "w") as f:
        json.dump({"force": [round(12 * (1 - math.exp(-i / 8)) + 0.4 * math.sin(i), 3) for i in range(60)],
                   "torque": [[round(0.02 * i, 3), round(-0.01 * i, 3), 0.5] for i in range(60)]}, f)
    p = cli("perceive", "force and torque while grasping the red cup", "--type", "tactile",
            "--data", trace, "--metadata", '{"rate_hz": 100, "units": "N"}')
    # Robot / task / outcome contexts, a second collection, a perception with a
    # time array and per-series units, and memories dated months back (import).
    for i, (robot, task, ok) in enumerate([("arm-7", "pick-cup", True), ("arm-9", "pick-cup", False),
                                           ("arm-9", "open-drawer", True), ("arm-7", "open-drawer", True)]):
        cli("learn", f"{task} trial {i}: drawer handle at {i}.2 cm offset worked as planned" if ok
            else f"{task} trial {i}: slipped off the handle", "--context",
            json.dumps({"robot": robot, "task": {"name": task, "success": ok}}))
    cli("learn", "lab-b camera exposure must be fixed at 8 ms", "--collection", "lab-b")
    grip = os.path.join(WORK, "grip.json")
    t = [round(0.01 * i, 2) for i in range(80)]
    with open(grip, "w") as f:
        json.dump({"t": t, "grip_force": [round(14.6 * (1 - math.exp(-x / 0.1)), 3) for x in t],
                   "finger_width": [round(0.085 - 0.03 * min(1, x / 0.3), 4) for x in t],
                   "p_slip": [round(0.5 * math.exp(-x / 0.2), 3) for x in t]}, f)
    g = cli("perceive", "grip closing on the mug handle", "--type", "tactile", "--data", grip, "--metadata",
            '{"rate_hz": 100, "units": {"t": "s", "grip_force": "N", "finger_width": "m", "p_slip": "probability"}}')
    export = subprocess.run([BIN, "--db", DB, "--no-embeddings", "export"], capture_output=True, text=True, check=True)
    lines = [json.loads(x) for x in export.stdout.splitlines()]
    header, memory = lines[0], next(x for x in lines if x["kind"] == "memory")
    now = datetime.datetime.now(datetime.timezone.utc)
    old = []
    for i, back in enumerate([300, 120]):
        stamp = (now - datetime.timedelta(days=back)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        old.append(dict(memory, id=100000 + i, content=f"calibrated the wrist camera, run {back} days back",
                        context={"robot": "arm-9", "task": {"name": "calibrate", "success": True}},
                        created_at=stamp, updated_at=stamp, session_id=None, auto_tags=[], user_tags=[]))
    header["memories"], header["sessions"] = len(old), 0
    subprocess.run([BIN, "--db", DB, "--no-embeddings", "--json", "import", "-"], check=True, capture_output=True,
                   text=True, input="\n".join(json.dumps(x) for x in [header, *old]) + "\n")
    return session, p["memory_id"], g["memory_id"], (now - datetime.timedelta(days=300)).date()


def start_server():
    proc = subprocess.Popen([BIN, "--db", DB, "--no-embeddings", "web", "--bind", "127.0.0.1:0"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = proc.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    if not m:
        proc.kill()
        sys.exit(f"robotmem web did not start: {line!r}")
    return proc, "http://" + m.group(1)


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = os.environ["CHROMIUM"]
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
              "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
              f"--user-data-dir={os.path.join(WORK, 'chromium-profile')}"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service(os.environ["CHROMEDRIVER"]), options=o)


def main():
    session, perception, grip, oldest = fill()
    server, base = start_server()
    d = browser()
    wait = WebDriverWait(d, 15)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    def shot(name):
        d.save_screenshot(os.path.join(OUT, f"{name}.png"))

    def ready(hash_):
        wait.until(lambda drv: drv.execute_script("return document.body.dataset.ready") == hash_)

    def no_script_ran():
        try:
            d.switch_to.alert.dismiss()
            check(False, "an alert opened")
        except NoAlertPresentException:
            pass
        check(d.execute_script("return window.pwned === undefined"), "markup from a memory ran as script")

    try:
        d.get(base + "/#/dashboard")
        ready("#/dashboard")
        stats = cli("stats")
        check(d.find_element(By.ID, "total-memories").text == str(stats["memories"]), "dashboard total = stats")
        check(d.find_element(By.ID, "total-sessions").text == "1", "dashboard sessions")
        check(len(d.find_elements(By.CSS_SELECTOR, "#chart-categories rect.bar")) == len(stats["by_category"]), "category bars")
        failed_rows = d.find_elements(By.CSS_SELECTOR, "#recent-failures tr.row")
        check(len(failed_rows) >= 2, "recent failures listed")
        texts = [r.text for r in failed_rows]
        check(any(XSS[0] in t for t in texts), "the <img> memory shows as text in recent failures")
        check(not d.find_elements(By.CSS_SELECTOR, "#view img, #view script, #view b, #view i"), "no element made from memory text")
        no_script_ran()
        # Item 8: a time axis over the whole range, with a y-axis; outcomes; failures full width.
        days = d.find_element(By.ID, "chart-days")
        check(len(days.find_elements(By.CSS_SELECTOR, "g.y-axis text")) >= 2, "per-day chart has a y-axis with ticks")
        first_day = days.get_attribute("data-first-day")
        check(first_day <= oldest.isoformat(), f"per-day chart spans back to the oldest memory ({first_day} vs {oldest})")
        check(days.get_attribute("data-last-day") == datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "per-day chart ends today")
        check(len(days.find_elements(By.CSS_SELECTOR, "rect.bar")) >= 3, "per-day chart has bars over the range")
        task_chart = d.find_element(By.ID, "chart-outcomes-task")
        check("pick-cup" in task_chart.text and task_chart.find_elements(By.CSS_SELECTOR, "rect.fail"),
              "failures per task charted")
        check("arm-9" in d.find_element(By.ID, "chart-outcomes-robot").text, "outcomes per robot charted")
        panel = d.find_element(By.ID, "recent-failures").size["width"]
        check(panel >= 0.9 * d.find_element(By.ID, "view").size["width"] - 40, f"recent failures full width ({panel})")
        shot("dashboard")
        d.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        shot("dashboard-bottom")

        d.get(base + "/#/memories")
        ready("#/memories")
        pages = math.ceil(stats["active"] / 25)
        check(f"page 1 of {pages}" in d.find_element(By.ID, "page-info").text, "memories paginated (25 per page)")
        # Item 9: outcome, robot and task columns from each memory's context.
        cells = lambda sel: [c.text for c in d.find_elements(By.CSS_SELECTOR, "table.memories " + sel)]
        check("✗ failure" in cells("td.outcome") and "✓ success" in cells("td.outcome"), "outcome cells")
        check("arm-9" in cells("td.robot") and "open-drawer" in cells("td.task"), "robot and task cells")
        shot("memories")
        d.find_element(By.ID, "next-page").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "page-info"), f"page 2 of {pages}"))

        d.get(base + "/#/search")
        ready("#/search")
        box = d.find_element(By.ID, "search-input")
        box.send_keys("red cup grasp")
        d.find_element(By.ID, "search-button").click()
        wait.until(EC.presence_of_element_located((By.ID, "search-mode")))
        check("mode bm25_only" in d.find_element(By.ID, "search-mode").text, "search shows its mode")
        # 40 grasps of the red cup, other numbers each: grouped by default on this page.
        rows = d.find_elements(By.CSS_SELECTOR, "table.memories tr.row")
        similar = d.find_elements(By.CSS_SELECTOR, "table.memories .similar")
        check(len(similar) >= 1 and "similar" in similar[0].text, "repeats grouped under one result, with their ids")
        check(len(rows) < 10, f"grouped: fewer rows than repeats ({len(rows)})")
        # Item 6: a collection select and "N of M matches".
        count = d.find_element(By.ID, "search-count").text
        check(re.search(r"^\d+ of (≥ )?\d+ match", count), f"search count says 'of' ({count!r})")
        cols = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#search-collection option")]
        check("lab-b" in cols and "default" in cols, f"collection select lists the collections ({cols})")
        check(d.find_elements(By.ID, "search-session"), "search form has a session field")
        shot("search-grouped")
        link = similar[0].find_element(By.TAG_NAME, "a")
        target_id = link.text.lstrip("#")
        link.click()
        ready(f"#/memory/{target_id}")
        check(f"Memory #{target_id}" in d.find_element(By.TAG_NAME, "h2").text, "a grouped id opens its memory")
        d.back()
        wait.until(EC.presence_of_element_located((By.ID, "search-group")))
        Select(d.find_element(By.ID, "search-group")).select_by_value("false")
        d.find_element(By.ID, "search-button").click()
        wait.until(lambda drv: "group_similar=false" in drv.current_url)
        # The grouped results stay on the page until the new ones are drawn.
        wait.until(lambda drv: drv.execute_script("return document.body.dataset.ready === location.hash"))
        rows = d.find_elements(By.CSS_SELECTOR, "table.memories tr.row")
        check(len(rows) == 5, "show each: five results (the default n)")
        check("score" in rows[0].text, "results show scores")
        shot("search")
        box = d.find_element(By.ID, "search-input")
        box.clear()
        box.send_keys("camera exposure")
        Select(d.find_element(By.ID, "search-collection")).select_by_value("lab-b")
        d.find_element(By.ID, "search-button").click()
        wait.until(lambda drv: "collection=lab-b" in drv.current_url)
        wait.until(lambda drv: drv.execute_script("return document.body.dataset.ready === location.hash"))
        rows = d.find_elements(By.CSS_SELECTOR, "table.memories tr.row")
        check(len(rows) == 1 and "8 ms" in rows[0].text, "search in the lab-b collection finds its memory")
        check(d.find_element(By.ID, "search-count").text.startswith("1 of 1 match"), "one of one match")
        # A spatial sort over a misspelt field: a warning naming it and the field that has coordinates.
        spatial = urllib.parse.quote('{"field": "spatial.pso", "target": [3, 0, 0]}')
        d.get(base + f"/#/search?q=red+cup+grasp&spatial={spatial}")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".search-warning")))
        warning = d.find_element(By.CSS_SELECTOR, ".search-warning").text
        check("spatial.pso" in warning and "spatial.pos" in warning, f"spatial warning names the fields ({warning!r})")
        check("dist –" in d.find_element(By.CSS_SELECTOR, "table.memories tr.row").text, "no distance shown as a dash")
        shot("search-spatial-warning")

        d.get(base + f"/#/memory/{grip}")
        ready(f"#/memory/{grip}")
        # Item 7: t is the x-axis; one small multiple per series with its unit.
        plots = d.find_elements(By.CSS_SELECTOR, "svg.perception-plot")
        names = [p.get_attribute("data-series") for p in plots]
        check(sorted(names) == ["finger_width", "grip_force", "p_slip"], f"one plot per series, none for t ({names})")
        plots = [plots[names.index(n)] for n in ["grip_force", "finger_width", "p_slip"]]
        check(all(len(p.find_elements(By.CSS_SELECTOR, "g.y-axis")) == 1 for p in plots), "one y-axis per series")
        check("grip_force (N)" in plots[0].text and "finger_width (m)" in plots[1].text, "y-axes carry units")
        check("t (s)" in plots[0].find_element(By.CSS_SELECTOR, "g.x-axis").text, "x-axis is t in seconds")
        tip = plots[0].find_element(By.CSS_SELECTOR, "circle.pt title").get_attribute("textContent")
        check(tip == "t = 0 s, grip_force = 0 N", f"hover value on each point ({tip!r})")
        plot_w = plots[0].size["width"]
        check(plot_w >= 0.9 * d.find_element(By.ID, "view").size["width"] - 40, f"plot uses the panel width ({plot_w})")
        shot("perception-units")

        d.get(base + f"/#/memory/{perception}")
        ready(f"#/memory/{perception}")
        check(len(d.find_elements(By.CSS_SELECTOR, "svg.perception-plot polyline")) == 4, "force + 3 torque axes plotted")
        shot("perception")

        target = cli("recall", "lidar glass door", "-n", "1")["memories"][0]["id"]
        d.get(base + f"/#/memory/{target}")
        ready(f"#/memory/{target}")
        check(d.find_element(By.ID, "detail-content").text == XSS[1], "markup shown as text in the detail view")
        check("<b>bold?</b>" in d.find_element(By.ID, "detail-context").text, "context JSON shown as text")
        check("<i>tag</i>" not in d.page_source or not d.find_elements(By.CSS_SELECTOR, "#detail-tags i"), "tag as text")
        no_script_ran()
        # Expiry: set from the console, shown, then cleared.
        check(d.find_element(By.ID, "expiry-now").text == "never expires", "no expiry yet")
        d.find_element(By.ID, "expiry-hours").send_keys("2")
        d.find_element(By.ID, "expiry-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "expiry-now"), "expires "))
        stored = cli("get", str(target))
        check(stored["expires_at"] is not None and not stored["expired"], f"expiry stored ({stored.get('expires_at')})")
        shot("expiry")
        d.find_element(By.ID, "expiry-clear").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "expiry-now"), "never expires"))
        check(cli("get", str(target))["expires_at"] is None, "expiry cleared in the file")
        d.find_element(By.ID, "forget-reason").send_keys("miscalibrated lidar")
        d.find_element(By.ID, "forget-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "memory-status"), "invalidated"))
        check(cli("get", str(target))["status"] == "invalidated", "forgotten in the file")
        shot("forgotten")
        # History: every version with what changed it; a version's time opens the memory as it was then.
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#history tr.version")))
        rows = d.find_elements(By.CSS_SELECTOR, "#history tr.version")
        causes = [r.find_element(By.CSS_SELECTOR, "td.cause").text for r in rows]
        check(causes == ["learn", "expiry", "expiry", "forget"], f"history lists each change ({causes})")
        check("miscalibrated lidar" in rows[-1].text and "shown" in rows[-1].get_attribute("class"),
              "the current version is the forgotten one, marked")
        shot("history")
        rows[0].find_element(By.TAG_NAME, "a").click()
        wait.until(EC.presence_of_element_located((By.ID, "as-of-banner")))
        wait.until(lambda drv: drv.execute_script("return document.body.dataset.ready === location.hash"))
        check(d.find_element(By.ID, "memory-status").text == "active", "as of its learning it was active")
        check(not d.find_elements(By.ID, "forget-button"), "no edit or forget on a past state")
        shown = d.find_elements(By.CSS_SELECTOR, "#history tr.version.shown")
        check(len(shown) == 1 and "learn" in shown[0].text, "the version shown is marked in the history")
        as_of = urllib.parse.parse_qs(d.current_url.split("?", 1)[1])["as_of"][0]
        shot("memory-as-of")
        d.get(base + "/#/search?q=lidar+glass+door&as_of=" + urllib.parse.quote(as_of))
        wait.until(EC.presence_of_element_located((By.ID, "as-of-banner")))
        wait.until(lambda drv: drv.execute_script("return document.body.dataset.ready === location.hash"))
        ids = [r.get_attribute("data-id") for r in d.find_elements(By.CSS_SELECTOR, "table.memories tr.row")]
        check(str(target) in ids, f"a search as of then finds the memory forgotten since ({ids})")
        check(d.find_element(By.ID, "search-as-of").get_attribute("value") == as_of, "the as-of field keeps the time")
        shot("search-as-of")

        d.get(base + "/#/dashboard")
        ready("#/dashboard")
        check(d.find_element(By.ID, "forgotten-memories").text == "1", "dashboard counts the forgotten memory")

        d.get(base + "/#/sessions")
        ready("#/sessions")
        title = d.find_element(By.CSS_SELECTOR, "#sessions .session-title").text
        check("arm-7" in title and "shelf-push" in title and session not in title, f"session title ({title!r})")
        shot("sessions")
        d.find_element(By.CSS_SELECTOR, "#sessions tr.row").click()
        wait.until(EC.presence_of_element_located((By.ID, "timeline")))
        heading = d.find_element(By.ID, "session-title").text
        check(session not in heading and "arm-7 · shelf-push" in heading and "outcome 0.60" in heading,
              f"session heading is a title, not the UUID ({heading!r})")
        check(len(d.find_elements(By.CSS_SELECTOR, "#timeline .item.fail")) == 1, "the failure is marked on the timeline")
        items = d.find_elements(By.CSS_SELECTOR, "#timeline .item")
        check(len(items) == 2 and "approached the shelf" in items[0].text, "session timeline in order")
        check("outcome 0.60" in d.find_element(By.ID, "session-outcome").text, "session outcome shown")
        shot("session")
        no_script_ran()
        # Purge from the dashboard: the memory forgotten above leaves the file.
        d.get(base + "/#/dashboard")
        ready("#/dashboard")
        days = d.find_element(By.ID, "purge-days")
        days.clear()
        days.send_keys("0")
        d.find_element(By.ID, "purge-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "purge-result"), "purged "))
        gone = subprocess.run([BIN, "--db", DB, "--no-embeddings", "get", str(target)], capture_output=True, text=True)
        check(gone.returncode == 12, f"purged from the file (get exits {gone.returncode})")
        shot("purge")
    except TimeoutException as e:
        shot("timeout")
        failures.append(f"timed out: {e.msg} at {d.current_url}")
    finally:
        d.quit()
        server.terminate()
        server.wait(10)
    if failures:
        sys.exit("browser test failed: " + "; ".join(failures))
    print(f"browser test: all checks passed ({len(os.listdir(OUT))} screenshots)")


if __name__ == "__main__":
    main()
