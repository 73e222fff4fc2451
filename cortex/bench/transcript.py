"""A Claude Code JSONL transcript written line by line, for the benchmarks that build sessions of their own
(`cortex.bench.amendments`, `cortex.bench.apart`): user prompts, assistant text, and tool calls with their
results (an error result marked `is_error`, as Claude Code marks one)."""
import json
import os
import time


class Transcript:
    def __init__(self, path: str, sid: str, cwd: str, t: float):
        self.path, self.sid, self.cwd, self.t, self.n = path, sid, cwd, t, 0
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()

    def _line(self, rtype: str, message: dict):
        self.n += 1
        self.t += 30
        rec = {"type": rtype, "sessionId": self.sid, "cwd": self.cwd, "uuid": "%s-%d" % (self.sid, self.n),
               "parentUuid": None, "isSidechain": False, "version": "2.1.39", "gitBranch": "main",
               "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.t)), "message": message}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def user(self, text: str):
        self._line("user", {"role": "user", "content": text})

    def say(self, text: str):
        self._line("assistant", {"id": "msg_%s_%d" % (self.sid[:8], self.n), "role": "assistant",
                                 "content": [{"type": "text", "text": text}]})

    def tool(self, name: str, inp: dict, result: str = "ok", error: bool = False):
        tid = "toolu_%s_%d" % (self.sid[:8], self.n)
        self._line("assistant", {"id": "msg_%s_%d" % (self.sid[:8], self.n), "role": "assistant",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        res = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if error:
            res["is_error"] = True
        self._line("user", {"role": "user", "content": [res]})
