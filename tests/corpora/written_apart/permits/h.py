"""Tiny helpers for writing Claude Code style turns (standard library only)."""


def U(text):
    return {"user": text}


def A(text):
    return {"assistant": text}


def B(command, description, result, error=False):
    t = {"tool": "Bash", "input": {"command": command, "description": description}, "result": result}
    if error:
        t["error"] = True
    return t


def R(path, result, error=False):
    t = {"tool": "Read", "input": {"file_path": "{P}/" + path}, "result": result}
    if error:
        t["error"] = True
    return t


def E(path, old, new, result=None, error=False):
    if result is None:
        result = "The file {P}/%s has been updated successfully." % path
    t = {"tool": "Edit", "input": {"file_path": "{P}/" + path, "old_string": old, "new_string": new},
         "result": result}
    if error:
        t["error"] = True
    return t


def W(path, content, result=None):
    if result is None:
        result = "File created successfully at: {P}/%s" % path
    return {"tool": "Write", "input": {"file_path": "{P}/" + path, "content": content}, "result": result}


def G(pattern, path, result):
    return {"tool": "Grep", "input": {"pattern": pattern, "path": "{P}/" + path if path else "{P}"},
            "result": result}


def chat(cid, day, *turns):
    return {"id": cid, "day": day, "turns": list(turns)}
