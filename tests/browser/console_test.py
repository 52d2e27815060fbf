"""The robotmem web console in headless chromium (run by scripts/browser-test.sh).

Fills a database with the robotmem command, serves it with `robotmem web` on
127.0.0.1, and drives the page: dashboard numbers, search (mode and scores), a
memory's detail with its force trace plotted, forget with a reason, a session's
timeline, and memories holding markup shown as text (no alert, no element made
from them). Saves a screenshot of each view under $OUT.
"""

import json
import math
import os
import re
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
    session = cli("session", "start", "--context", '{"robot": {"id": "arm-7"}}')["session_id"]
    cli("learn", "approached the shelf from the left side", "--session", session)
    cli("learn", "pushed the box 0.3 m toward the wall", "--session", session)
    cli("session", "end", session, "--outcome", "0.6")
    trace = os.path.join(WORK, "trace.json")
    with open(trace, "w") as f:
        json.dump({"force": [round(12 * (1 - math.exp(-i / 8)) + 0.4 * math.sin(i), 3) for i in range(60)],
                   "torque": [[round(0.02 * i, 3), round(-0.01 * i, 3), 0.5] for i in range(60)]}, f)
    p = cli("perceive", "force and torque while grasping the red cup", "--type", "tactile",
            "--data", trace, "--metadata", '{"rate_hz": 100, "units": "N"}')
    return session, p["memory_id"]


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
    session, perception = fill()
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
        shot("dashboard")

        d.get(base + "/#/memories")
        ready("#/memories")
        check("page 1 of 2" in d.find_element(By.ID, "page-info").text, "memories paginated (25 per page)")
        d.find_element(By.ID, "next-page").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "page-info"), "page 2 of 2"))
        shot("memories")

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
        d.find_element(By.ID, "forget-reason").send_keys("miscalibrated lidar")
        d.find_element(By.ID, "forget-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "memory-status"), "invalidated"))
        check(cli("get", str(target))["status"] == "invalidated", "forgotten in the file")
        shot("forgotten")

        d.get(base + "/#/dashboard")
        ready("#/dashboard")
        check(d.find_element(By.ID, "forgotten-memories").text == "1", "dashboard counts the forgotten memory")

        d.get(base + "/#/sessions")
        ready("#/sessions")
        d.find_element(By.CSS_SELECTOR, "#sessions tr.row").click()
        wait.until(EC.presence_of_element_located((By.ID, "timeline")))
        items = d.find_elements(By.CSS_SELECTOR, "#timeline .item")
        check(len(items) == 2 and "approached the shelf" in items[0].text, "session timeline in order")
        check("outcome 0.60" in d.find_element(By.ID, "session-outcome").text, "session outcome shown")
        shot("session")
        no_script_ran()
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
