"""`robotmem mcp` driven by the official MCP Python SDK (`mcp`), over stdio.

Run by scripts/mcp-clients-test.sh with ROBOTMEM_BIN (the command) and WORK (a
temporary directory). Twice: mode "auto" (the SDK probes server/discover and
speaks the current protocol, 2026-07-28) and "legacy" (the initialize handshake,
2025-11-25). Each run: the tool list, every tool valid and invalid, resources, a
session from start to end, 8 concurrent recalls, 300/301-character insights.
Prints one line per check and "N passed, N failed" at the end; exits 1 on a
failure.
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

BIN = os.environ["ROBOTMEM_BIN"]
WORK = os.environ["WORK"]
TOOLS = ["learn", "recall", "save_perception", "forget", "update", "set_expiry", "purge", "start_session", "end_session", "memory_history", "doctor"]

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def text(r):
    return r.content[0].text if r.content else ""


async def ok(c, tool, args):
    r = await c.call_tool(tool, args)
    good = not r.is_error and json.loads(text(r)) == r.structured_content
    check(f"{tool} {sorted(args)}", good, text(r)[:300])
    return r.structured_content or {}


async def refused(c, tool, args, field):
    r = await c.call_tool(tool, args)
    check(f"{tool} refuses {field}", bool(r.is_error) and field in text(r), f"is_error={r.is_error} {text(r)[:300]}")


async def run(mode, expect_version):
    db = os.path.join(WORK, f"{mode}.db")
    params = StdioServerParameters(command=BIN, args=["mcp", "--db", db, "--no-embeddings"])
    async with Client(params, mode=mode, read_timeout_seconds=120) as c:
        print(f"--- mode {mode}: protocol {c.protocol_version}")
        check(f"{mode}: protocol version", c.protocol_version == expect_version, c.protocol_version)
        check(f"{mode}: server name", c.server_info is not None and c.server_info.name == "robotmem", repr(c.server_info))
        tools = (await c.list_tools()).tools
        check(f"{mode}: tools", [t.name for t in tools] == TOOLS, [t.name for t in tools])
        recall = next(t for t in tools if t.name == "recall")
        props = recall.input_schema["properties"]
        check(f"{mode}: recall schema", props["n"]["default"] == 5 and props["n"]["maximum"] == 100 and props["min_confidence"]["default"] == 0.3, json.dumps(props)[:300])

        # learn, with the 300-character limit
        ctx = json.dumps({"params": {"grip_force": {"value": 12.5}}, "task": {"success": True}})
        l = await ok(c, "learn", {"insight": "Found that grip_force 12.5N is optimal for red cups", "context": ctx})
        mid = l.get("memory_id")
        await ok(c, "learn", {"insight": "x" * 299 + "y"})
        await refused(c, "learn", {"insight": "z" * 301}, "insight")
        await refused(c, "learn", {"insight": 7}, "insight")
        await refused(c, "learn", {"insight": "fine", "colection": "typo"}, "colection")

        # recall
        r = await ok(c, "recall", {"query": "grip force red cups", "n": 3})
        check(f"{mode}: recall finds it", r.get("memories", [{}])[0].get("id") == mid, json.dumps(r)[:300])
        await refused(c, "recall", {"query": "grip", "n": 0}, "n")
        await refused(c, "recall", {"query": "grip", "min_confidence": 2}, "min_confidence")
        await refused(c, "recall", {"query": "grip", "context_filter": "{bad"}, "context_filter")

        # 8 concurrent recalls
        rs = await asyncio.gather(*[c.call_tool("recall", {"query": f"grip cups {i}", "n": 2}) for i in range(8)])
        check(f"{mode}: 8 concurrent recalls", all(not x.is_error and x.structured_content["memories"] for x in rs), [text(x)[:80] for x in rs])

        # save_perception
        data = json.dumps({"force": [1.0, 2.5, 3.0]})
        p = await ok(c, "save_perception", {"description": "grip force trace", "perception_type": "tactile", "data": data})
        check(f"{mode}: perception type", p.get("perception_type") == "tactile", p)
        await refused(c, "save_perception", {"description": "grip force trace", "perception_type": "smell"}, "perception_type")
        await refused(c, "save_perception", {"description": "abc"}, "description")

        # update, forget
        u = await ok(c, "update", {"memory_id": mid, "new_content": "Found that grip_force 11N is optimal for red cups"})
        check(f"{mode}: update old content", "12.5N" in u.get("old_content", ""), u)
        await refused(c, "update", {"memory_id": 0, "new_content": "x"}, "memory_id")
        await refused(c, "update", {"memory_id": 999999, "new_content": "x"}, "RM_NOT_FOUND")
        f = await ok(c, "forget", {"memory_id": mid, "reason": "sensor calibration error"})
        check(f"{mode}: forgotten", f.get("status") == "forgotten", f)
        await refused(c, "forget", {"memory_id": mid}, "reason")
        # history, and recall as of the first version (before the update and the forget)
        h = await ok(c, "memory_history", {"memory_id": mid})
        causes = [v["cause"] for v in h.get("versions", [])]
        check(f"{mode}: history", causes == ["learn", "update", "forget"], h)
        then = await ok(c, "recall", {"query": "grip force red cups", "as_of": h["versions"][0]["valid_from"]})
        check(f"{mode}: recall as of", then["memories"] and "12.5N" in then["memories"][0]["content"], then)
        await refused(c, "recall", {"query": "grip", "as_of": "not a time"}, "as_of")

        # a session
        s = await ok(c, "start_session", {"context": json.dumps({"robot": {"type": "UR5e"}})})
        sid = s.get("session_id", "")
        for i in range(3):
            await ok(c, "learn", {"insight": f"step {i}: the gripper slipped because the cup was wet", "session_id": sid})
        await ok(c, "learn", {"insight": "Lesson: dry the cup first, the task failed", "session_id": sid, "context": json.dumps({"task": {"success": False}})})
        await refused(c, "end_session", {"session_id": sid, "outcome_score": 1.5}, "outcome_score")
        e = await ok(c, "end_session", {"session_id": sid, "outcome_score": 0.4})
        check(f"{mode}: session ended", e.get("status") == "ended" and e.get("session_id") == sid, e)
        await refused(c, "end_session", {}, "session_id")

        d = await ok(c, "doctor", {})
        check(f"{mode}: doctor ok", d.get("ok") is True, json.dumps(d)[:300])

        # resources
        res = (await c.list_resources()).resources
        check(f"{mode}: resources", sorted(str(x.uri) for x in res) == ["robotmem://recent-failures", "robotmem://stats"], res)
        tmpl = (await c.list_resource_templates()).resource_templates
        check(f"{mode}: template", [t.uri_template for t in tmpl] == ["robotmem://session/{id}"], tmpl)
        stats = json.loads((await c.read_resource("robotmem://stats")).contents[0].text)
        check(f"{mode}: stats", stats.get("sessions") == 1 and stats.get("forgotten") == 1, stats)
        fails = json.loads((await c.read_resource("robotmem://recent-failures")).contents[0].text)
        check(f"{mode}: recent failures", any("dry the cup" in m["content"] for m in fails["memories"]), fails)
        tl = json.loads((await c.read_resource(f"robotmem://session/{sid}")).contents[0].text)
        check(f"{mode}: session timeline", [m["content"][:6] for m in tl["memories"]][:1] == ["step 0"], tl)
        try:
            await c.read_resource("robotmem://nothing")
            check(f"{mode}: unknown resource refused", False)
        except Exception as ex:  # the SDK raises the JSON-RPC error
            check(f"{mode}: unknown resource refused", "uri" in str(ex), str(ex))


async def main():
    await run("auto", "2026-07-28")
    await run("legacy", "2025-11-25")
    print(f"python MCP client: {passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(asyncio.run(main()))
