"""Put text into chosen positions of real transcripts (Claude Code, Codex, Gemini), keeping their shape.

`inject_file(path, client, position, make)` rewrites a copied transcript in place.  `make(where, original)`
returns the new string for one site; `where` names the site ("assistant", "prompt", "command", "todo",
"output", "file", "cwd", ...).  Positions:

    assistant_text  the assistant's visible text (tag lines and decisions are added there)
    user_prompt     what the user typed (and, in it, tag lines)
    tool_input      commands, file contents, tool arguments (not plans)
    plan_items      TodoWrite / update_plan / write_todos items
    tool_output     tool results and command output
    file_path       the paths tools edit, write or read
    cwd             the working directory recorded in the transcript
"""
from __future__ import annotations

import json
import os

POSITIONS = ("assistant_text", "user_prompt", "tool_input", "plan_items", "tool_output", "file_path", "cwd")


def _path(make, p):
    if not isinstance(p, str) or not p:
        return p
    d, b = os.path.split(p)
    return os.path.join(d, make("file", b))


def _claude(rec, pos, make):
    t = rec.get("type")
    if pos == "cwd" and isinstance(rec.get("cwd"), str):
        rec["cwd"] = make("cwd", rec["cwd"])
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return
    content = msg.get("content")
    if t == "assistant" and isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and pos == "assistant_text" and isinstance(b.get("text"), str):
                b["text"] = make("assistant", b["text"])
            elif b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                inp = b["input"]
                if pos == "tool_input":
                    for k in ("command", "content", "new_string", "prompt", "description", "pattern"):
                        if isinstance(inp.get(k), str):
                            inp[k] = make("command", inp[k])
                    for e in inp.get("edits") or []:
                        if isinstance(e, dict) and isinstance(e.get("new_string"), str):
                            e["new_string"] = make("command", e["new_string"])
                if pos == "plan_items" and isinstance(inp.get("todos"), list):
                    for td in inp["todos"]:
                        if isinstance(td, dict):
                            for k in ("content", "activeForm"):
                                if isinstance(td.get(k), str):
                                    td[k] = make("todo", td[k])
                if pos == "file_path":
                    for k in ("file_path", "notebook_path", "path"):
                        if isinstance(inp.get(k), str):
                            inp[k] = _path(make, inp[k])
    elif t == "user":
        if isinstance(content, str) and pos == "user_prompt" and not rec.get("isMeta"):
            msg["content"] = make("prompt", content)
        elif isinstance(content, list):
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and pos == "user_prompt" and isinstance(b.get("text"), str):
                    b["text"] = make("prompt", b["text"])
                elif b.get("type") == "tool_result" and pos == "tool_output":
                    c = b.get("content")
                    if isinstance(c, str):
                        b["content"] = make("output", c)
                    elif isinstance(c, list):
                        for x in c:
                            if isinstance(x, dict) and isinstance(x.get("text"), str):
                                x["text"] = make("output", x["text"])
        tur = rec.get("toolUseResult")
        if pos == "tool_output" and isinstance(tur, dict):
            for k in ("stdout", "stderr"):
                if isinstance(tur.get(k), str):
                    tur[k] = make("output", tur[k])


def _codex_args(p, pos, make):
    try:
        args = json.loads(p.get("arguments") or "")
    except ValueError:
        return
    if not isinstance(args, dict):
        return
    if pos == "tool_input":
        for k in ("cmd", "command", "chars"):
            v = args.get(k)
            if isinstance(v, str):
                args[k] = make("command", v)
            elif isinstance(v, list) and v and isinstance(v[-1], str):
                v[-1] = make("command", v[-1])
    if pos == "plan_items" and isinstance(args.get("plan"), list):
        for it in args["plan"]:
            if isinstance(it, dict) and isinstance(it.get("step"), str):
                it["step"] = make("todo", it["step"])
    if pos == "cwd" and isinstance(args.get("workdir"), str):
        args["workdir"] = make("cwd", args["workdir"])
    p["arguments"] = json.dumps(args, ensure_ascii=False)


def _codex(rec, pos, make):
    t, p = rec.get("type"), rec.get("payload")
    if not isinstance(p, dict):
        return
    pt = p.get("type")
    if pos == "cwd" and isinstance(p.get("cwd"), str) and t in ("session_meta", "turn_context", "event_msg"):
        p["cwd"] = make("cwd", p["cwd"])
    if t == "response_item" and pt == "message" and isinstance(p.get("content"), list):
        for c in p["content"]:
            if not isinstance(c, dict) or not isinstance(c.get("text"), str):
                continue
            if p.get("role") == "assistant" and pos == "assistant_text":
                c["text"] = make("assistant", c["text"])
            elif p.get("role") == "user" and pos == "user_prompt" and not c["text"].lstrip().startswith("<"):
                c["text"] = make("prompt", c["text"])
    elif t == "event_msg" and pt == "user_message" and pos == "user_prompt" and isinstance(p.get("message"), str):
        p["message"] = make("prompt", p["message"])
    elif t == "event_msg" and pt == "agent_message" and pos == "assistant_text" and isinstance(p.get("message"), str):
        p["message"] = make("assistant", p["message"])
    elif t == "response_item" and pt == "function_call":
        _codex_args(p, pos, make)
    elif t == "response_item" and pt in ("function_call_output", "custom_tool_call_output") and pos == "tool_output":
        if isinstance(p.get("output"), str):
            p["output"] = make("output", p["output"])
    elif t == "event_msg" and pt == "exec_command_end" and pos == "tool_output":
        for k in ("stdout", "stderr", "aggregated_output", "formatted_output"):
            if isinstance(p.get(k), str):
                p[k] = make("output", p[k])
    elif t == "response_item" and pt == "custom_tool_call" and isinstance(p.get("input"), str):
        if pos == "file_path":
            lines = p["input"].split("\n")
            for i, line in enumerate(lines):
                for head in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
                    if line.startswith(head):
                        lines[i] = head + _path(make, line[len(head):])
            p["input"] = "\n".join(lines)
        elif pos == "tool_input":
            p["input"] = p["input"].replace("\n+", "\n+%s" % make("command", "").strip() + " ", 1)


def _gemini(doc, pos, make):
    for m in doc.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("type") == "gemini" and pos == "assistant_text" and isinstance(m.get("content"), str):
            m["content"] = make("assistant", m["content"])
        if m.get("type") == "user" and pos == "user_prompt":
            if isinstance(m.get("content"), str):
                m["content"] = make("prompt", m["content"])
            elif isinstance(m.get("content"), list):
                for part in m["content"]:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        part["text"] = make("prompt", part["text"])
        for tc in m.get("toolCalls") or []:
            if not isinstance(tc, dict):
                continue
            args = tc.get("args") if isinstance(tc.get("args"), dict) else {}
            if pos == "tool_input":
                for k in ("content", "command", "objective", "pattern", "new_string"):
                    if isinstance(args.get(k), str):
                        args[k] = make("command", args[k])
            if pos == "plan_items" and isinstance(args.get("todos"), list):
                for td in args["todos"]:
                    if isinstance(td, dict) and isinstance(td.get("description"), str):
                        td["description"] = make("todo", td["description"])
            if pos == "file_path":
                for k in ("file_path", "absolute_path", "path"):
                    if isinstance(args.get(k), str):
                        args[k] = _path(make, args[k])
            if pos == "tool_output":
                for res in tc.get("result") or []:
                    resp = ((res or {}).get("functionResponse") or {}).get("response") if isinstance(res, dict) else None
                    if isinstance(resp, dict) and isinstance(resp.get("output"), str):
                        resp["output"] = make("output", resp["output"])
                if isinstance(tc.get("resultDisplay"), str):
                    tc["resultDisplay"] = make("output", tc["resultDisplay"])


def inject_file(path, client: str, position: str, make) -> None:
    path = str(path)
    if client == "gemini":
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        _gemini(doc, position, make)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=2)
        return
    fn = _claude if client == "claude-code" else _codex
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                out.append(line)
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                out.append(line)
                continue
            if isinstance(rec, dict):
                fn(rec, position, make)
            out.append(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(out)
