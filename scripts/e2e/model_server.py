#!/usr/bin/env python3
"""A scripted model server for scripts/e2e-real-clis: it speaks the APIs the real agent
CLIs use — Anthropic Messages (/v1/messages), OpenAI Responses (/v1/responses) and Chat
Completions (/v1/chat/completions, also Mistral's), Gemini generateContent and
streamGenerateContent — streaming when asked, and plays one liza task:

- a coder prompt (``ROLE: coder``): first a call of the CLI's shell tool that writes
  hello.txt, commits it and runs ``liza submit-for-review``; once a tool result is back, a
  short final answer. Without tools (aider) the answer is a whole-file edit of hello.txt.
- a reviewer prompt (``ROLE: code-reviewer``): a shell call of ``liza submit-verdict … approve``;
  without tools, an answer ending in ``LIZA-VERDICT: approve``.
- anything else (titles, commit messages, next-speaker checks): a short plain answer.

Every model call is answered with the same distinct usage, each API in its own fields and
meaning, so every count a CLI reports can be told apart: 56 output tokens (5 of them
reasoning where the API says so); Anthropic 1234 uncached input, 789 cache reads and 12
cache writes; OpenAI and Gemini a 1234-token prompt of which 789 cached (cache writes of 12
only with --responses-cache-write / --chat-cache-write, in fields OpenAI does not document).

Every request is logged (path, body; no headers, so no keys) under --log-dir, and every
call answered with usage adds a line to <log-dir>/served.jsonl: the API, the path, the
model asked and the usage served, in the ledger's meaning (specs/ledger.md): input neither
read from nor written to the cache, output with reasoning, cache reads, cache writes (null
where the API served no such field). scripts/e2e-real-clis sets it beside liza's ledger.
Standard library only.
"""

import argparse
import json
import os
import re
import shlex
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_DIR = None
LIMIT = None
COUNTER = [0]
CHAT_CACHE_WRITE = False
RESPONSES_CACHE_WRITE = False
RETRY_AFTER = "7980"
LOCK = threading.Lock()

# Distinct usage numbers (usage-obs copy): every field can be told apart in a CLI's report.
IN, OUT, CACHE_READ, CACHE_WRITE, REASONING = 1234, 56, 789, 12, 5

SHELL_TOOLS = ("bash", "shell", "run_shell_command", "exec_command", "local_shell",
               "shell_command", "execute_command", "terminal", "run_command", "command")


def log_request(path, body):
    if not LOG_DIR:
        return
    with LOCK:
        COUNTER[0] += 1
        n = COUNTER[0]
    with open(os.path.join(LOG_DIR, f"{n:04d}.json"), "w") as f:
        json.dump({"path": path, "body": body}, f, indent=1)


def ledger_usage(api, usage):
    """The usage served, in the ledger's meaning: `input_tokens` neither read from nor
    written to the cache (Anthropic's meaning; OpenAI's and Gemini's prompt counts include
    the cached tokens, and are taken out), output with reasoning, cache reads and writes
    (None where the API served no such field)."""
    if api == "anthropic":
        return (usage["input_tokens"], usage["output_tokens"],
                usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens"))
    if api == "responses":
        details = usage.get("input_tokens_details") or {}
        read, write = details.get("cached_tokens", 0), details.get("cache_write_tokens")
        return usage["input_tokens"] - read - (write or 0), usage["output_tokens"], read, write
    if api == "chat":
        read = (usage.get("prompt_tokens_details") or {}).get("cached_tokens",
                                                              usage.get("cache_read_input_tokens", 0))
        write = usage.get("cache_creation_input_tokens")
        return usage["prompt_tokens"] - read - (write or 0), usage["completion_tokens"], read, write
    if api == "gemini":
        read = usage.get("cachedContentTokenCount", 0)
        return usage["promptTokenCount"] - read, usage.get("candidatesTokenCount", 0), read, None
    raise ValueError(api)


def log_served(api, path, model, usage):
    """One line of served.jsonl for a call answered (200) with `usage`."""
    if not LOG_DIR:
        return
    uncached, output, read, write = ledger_usage(api, usage)
    line = json.dumps({"api": api, "path": path, "model": model, "input_tokens": uncached,
                       "output_tokens": output, "cache_read_tokens": read, "cache_write_tokens": write})
    with LOCK:
        with open(os.path.join(LOG_DIR, "served.jsonl"), "a") as f:
            f.write(line + "\n")


# ---------------------------------------------------------------- what to do


def all_text(value):
    """Every string inside a request body, joined."""
    out = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return "\n".join(out)


def field(text, name):
    m = re.search(r"^" + re.escape(name) + r": (\S+)", text, re.M)
    return m.group(1) if m else None


def from_schema(schema):
    """A value matching a JSON schema (Gemini's router and next-speaker checks ask for one)."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: from_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "user" if "speaker" in json.dumps(schema) else "simple"


def plan(body, has_result, tools):
    """(kind, payload): ("shell", command) or ("text", answer)."""
    text = all_text({k: v for k, v in body.items() if k not in ("tools",)})
    role = field(text, "ROLE")
    task = field(text, "TASK")
    if role == "coder" and task:
        if has_result:
            return ("text", "Done: hello.txt is committed and the task submitted.")
        worktree = field(text, "WORKTREE")
        if not tools:
            return ("text", "I will create the file.\n\nhello.txt\n```\nhello\n```\n")
        command = (f"cd {shlex.quote(worktree)} && printf 'hello\\n' > hello.txt && "
                   f"git add hello.txt && git commit -q -m 'Add hello.txt' && "
                   f"liza submit-for-review {shlex.quote(task)}")
        return ("shell", command)
    if role == "code-reviewer" and task:
        if has_result:
            return ("text", "Approved.")
        commit = field(text, "REVIEW COMMIT")
        if not tools:
            return ("text", "The change creates hello.txt as asked.\nLIZA-VERDICT: approve\n")
        return ("shell", f"liza submit-verdict {shlex.quote(task)} approve --commit {shlex.quote(commit)}")
    if "next_speaker" in text:
        return ("text", json.dumps({"reasoning": "The model finished its turn.", "next_speaker": "user"}))
    if "commit message" in text.lower():
        return ("text", "Add hello.txt")
    return ("text", "OK.")


def shell_tool(tools):
    """(name, arguments builder) of the first shell-like tool, by name."""
    for name, schema in tools:
        if name.lower() in SHELL_TOOLS or "shell" in name.lower() or name.lower() == "bash":
            props = (schema or {}).get("properties", {})

            def build(command, props=props):
                args = {}
                key = "command" if "command" in props or not props else next(iter(props))
                kind = props.get(key, {}).get("type")
                if kind == "array":
                    args[key] = ["bash", "-lc", command]
                else:
                    args[key] = command
                if "description" in props:
                    args["description"] = "Run the task's command"
                if "workdir" in props and key != "workdir":
                    pass
                return args

            return name, build
    return None


# ---------------------------------------------------------------- the APIs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def send_json(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        chunk = ""
        if event:
            chunk += f"event: {event}\n"
        chunk += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self.send_json({"object": "list", "data": [{"id": "e2e-model", "object": "model"}],
                                   "models": [{"name": "models/gemini-2.5-pro"}]})
        self.send_json({"ok": True})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.body()
        log_request(self.path, body)
        path = self.path.split("?")[0]
        if LIMIT:
            return self.limited(path)
        if path.endswith("/messages/count_tokens"):
            return self.send_json({"input_tokens": 100})
        if path.endswith("/messages"):
            return self.anthropic(body, path)
        if path.endswith("/responses"):
            return self.openai_responses(body, path)
        if path.endswith("/chat/completions"):
            return self.chat(body, path)
        if ":countTokens" in path:
            return self.send_json({"totalTokens": 100})
        if ":generateContent" in path or ":streamGenerateContent" in path:
            return self.gemini(body, path, stream=":streamGenerateContent" in path)
        self.send_json({"error": {"message": f"no such endpoint {path}"}}, 404)

    # Usage limits ---------------------------------------------------------------
    def limited(self, path):
        """429 with the provider's own error body (--limit), to record what each CLI
        prints on a usage limit and how it exits."""
        if LIMIT == "auth":
            return self.unauthorized(path)
        if path.endswith("/messages"):
            body = {"type": "error", "error": {"type": "rate_limit_error",
                    "message": "This request would exceed your account's rate limit. Please try again later."}}
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                              "message": "You have exhausted your daily quota on this model."}}
        elif LIMIT == "quota":
            body = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                              "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
        else:
            body = {"error": {"message": "Rate limit reached for gpt-4.1 in organization org-e2e on tokens per min (TPM): "
                              "Limit 30000, Used 30000, Requested 100. Please try again in 2h13m.",
                              "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}
        data = json.dumps(body).encode()
        self.send_response(429)
        self.send_header("content-type", "application/json")
        self.send_header("retry-after", RETRY_AFTER)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def unauthorized(self, path):
        """401 with the provider's own invalid-key body (--limit auth)."""
        if path.endswith("/messages"):
            body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            status = 401
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            body = {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                              "message": "API key not valid. Please pass a valid API key.",
                              "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                           "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
            status = 400
        else:
            body = {"error": {"message": "Incorrect API key provided: sk-e2e-***. You can find your API key at https://platform.openai.com/account/api-keys.",
                              "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
            status = 401
        self.send_json(body, status)

    # Anthropic Messages -------------------------------------------------------
    def anthropic(self, body, path):
        tools = [(t.get("name"), t.get("input_schema")) for t in body.get("tools") or []]
        has_result = any(isinstance(m.get("content"), list) and
                         any(b.get("type") == "tool_result" for b in m["content"] if isinstance(b, dict))
                         for m in body.get("messages", []))
        kind, payload = plan(body, has_result, tools)
        tool = shell_tool(tools) if kind == "shell" else None
        if tool:
            name, build = tool
            block = {"type": "tool_use", "id": f"toolu_{int(time.time()*1000)}", "name": name,
                     "input": build(payload)}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": payload if kind == "text" else "Done."}
            stop = "end_turn"
        message = {"id": f"msg_{int(time.time()*1000)}", "type": "message", "role": "assistant",
                   "model": body.get("model", "e2e-model"), "content": [block], "stop_reason": stop,
                   "stop_sequence": None, "usage": {"input_tokens": IN, "output_tokens": OUT,
                                                     "cache_read_input_tokens": CACHE_READ,
                                                     "cache_creation_input_tokens": CACHE_WRITE}}
        served = ("anthropic", path, body.get("model"), message["usage"])
        if not body.get("stream"):
            self.send_json(message)
            return log_served(*served)
        self.start_sse()
        # As the real API: message_start carries input and cache counts, output_tokens 1;
        # message_delta the cumulative counts, output included.
        start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
        self.sse({"type": "message_start", "message": start}, "message_start")
        if block["type"] == "text":
            self.sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": block["text"]}}, "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": dict(block, input={})}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                     "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": dict(message["usage"])}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")
        log_served(*served)

    # OpenAI Responses ---------------------------------------------------------
    def openai_responses(self, body, path):
        tools = []
        items = body.get("input") if isinstance(body.get("input"), list) else []
        # Codex 0.169 lists its tools in an `additional_tools` input item, in namespaces;
        # its shell is `exec_command`, reached from JavaScript run by the custom `exec` tool.
        declared = list(body.get("tools") or [])
        for item in items:
            if isinstance(item, dict) and item.get("type") == "additional_tools":
                declared.extend(item.get("tools") or [])
        js_exec = False
        while declared:
            t = declared.pop(0)
            if t.get("type") == "namespace":
                declared.extend(t.get("tools") or [])
            elif t.get("type") == "custom" and t.get("name") == "exec" and "exec_command" in (t.get("description") or ""):
                js_exec = True
            elif t.get("type") == "function":
                tools.append((t.get("name"), t.get("parameters")))
            elif t.get("type") in ("local_shell", "shell"):
                tools.append((t.get("type"), {"properties": {"command": {"type": "array"}}}))
        if js_exec:
            tools.insert(0, ("exec", None))
        has_result = any(isinstance(i, dict) and i.get("type") in
                         ("function_call_output", "local_shell_call_output", "custom_tool_call_output")
                         for i in items)
        kind, payload = plan(body, has_result, tools)
        tool = shell_tool(tools) if kind == "shell" else None
        rid = f"resp_{int(time.time()*1000)}"
        if kind == "shell" and js_exec:
            script = ("const r = await tools.exec_command({cmd: %s, login: false});\n"
                      "text(r.output); text('exit code: ' + r.exit_code);" % json.dumps(payload))
            item = {"type": "custom_tool_call", "id": f"ctc_{rid}", "call_id": f"call_{rid}", "name": "exec",
                    "input": script, "status": "completed"}
        elif tool:
            name, build = tool
            item = {"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_{rid}", "name": name,
                    "arguments": json.dumps(build(payload)), "status": "completed"}
        else:
            item = {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": payload, "annotations": []}]}
        usage = {"input_tokens": IN, "input_tokens_details": {"cached_tokens": CACHE_READ}, "output_tokens": OUT,
                 "output_tokens_details": {"reasoning_tokens": REASONING}, "total_tokens": IN + OUT}
        if RESPONSES_CACHE_WRITE:
            # Not in OpenAI's docs; what codex 0.169 parses (ResponseCompletedInputTokensDetails).
            usage["input_tokens_details"]["cache_write_tokens"] = CACHE_WRITE
        response = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
                    "model": body.get("model", "e2e-model"), "output": [item], "usage": usage}
        served = ("responses", path, body.get("model"), usage)
        if not body.get("stream"):
            self.send_json(response)
            return log_served(*served)
        self.start_sse()
        seq = iter(range(1000))
        self.sse({"type": "response.created", "sequence_number": next(seq),
                  "response": dict(response, status="in_progress", output=[], usage=None)}, "response.created")
        self.sse({"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0,
                  "item": dict(item, status="in_progress")}, "response.output_item.added")
        if item["type"] == "custom_tool_call":
            pass
        elif item["type"] == "message":
            self.sse({"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "delta": payload}, "response.output_text.delta")
        else:
            self.sse({"type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                      "item_id": item["id"], "output_index": 0, "delta": item["arguments"]},
                     "response.function_call_arguments.delta")
        self.sse({"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0,
                  "item": item}, "response.output_item.done")
        self.sse({"type": "response.completed", "sequence_number": next(seq), "response": response},
                 "response.completed")
        log_served(*served)

    # Chat Completions -----------------------------------------------------------
    def chat(self, body, path):
        tools = [((t.get("function") or {}).get("name"), (t.get("function") or {}).get("parameters"))
                 for t in body.get("tools") or []]
        has_result = any(m.get("role") == "tool" for m in body.get("messages", []))
        kind, payload = plan(body, has_result, tools)
        tool = shell_tool(tools) if kind == "shell" else None
        cid = f"chatcmpl-{int(time.time()*1000)}"
        model = body.get("model", "e2e-model")
        if tool:
            name, build = tool
            call = {"id": f"call_{cid[-8:]}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(build(payload))}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": payload}
            finish = "stop"
        usage = {"prompt_tokens": IN, "completion_tokens": OUT, "total_tokens": IN + OUT,
                 "prompt_tokens_details": {"cached_tokens": CACHE_READ},
                 "completion_tokens_details": {"reasoning_tokens": REASONING}}
        if CHAT_CACHE_WRITE:
            # Not OpenAI's: the Anthropic-style extra some gateways (and litellm) use.
            usage["cache_creation_input_tokens"] = CACHE_WRITE
            usage["cache_read_input_tokens"] = CACHE_READ
        served = ("chat", path, body.get("model"), usage)
        if not body.get("stream"):
            self.send_json({"id": cid, "object": "chat.completion", "created": int(time.time()),
                            "model": model, "choices": [{"index": 0, "message": message,
                                                         "finish_reason": finish}], "usage": usage})
            return log_served(*served)
        self.start_sse()
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        if tool:
            delta = {"role": "assistant", "content": None,
                     "tool_calls": [dict(call, index=0)]}
        else:
            delta = {"role": "assistant", "content": payload}
        self.sse(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
        self.sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage))
        self.sse("[DONE]")
        log_served(*served)

    # Gemini -----------------------------------------------------------------
    def gemini(self, body, path, stream):
        tools = []
        for t in body.get("tools") or []:
            for f in t.get("functionDeclarations") or t.get("function_declarations") or []:
                tools.append((f.get("name"), f.get("parametersJsonSchema") or f.get("parameters")))
        has_result = any("functionResponse" in p for c in body.get("contents", [])
                         for p in c.get("parts", []) if isinstance(p, dict))
        kind, payload = plan(body, has_result, tools)
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or \
            (body.get("generationConfig") or {}).get("responseSchema")
        if schema and kind == "text":
            payload = json.dumps(from_schema(schema))
        tool = shell_tool(tools) if kind == "shell" else None
        if tool:
            name, build = tool
            part = {"functionCall": {"name": name, "args": build(payload)}}
        else:
            part = {"text": payload}
        reply = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
                                 "index": 0}],
                 "usageMetadata": {"promptTokenCount": IN, "candidatesTokenCount": OUT,
                                   "cachedContentTokenCount": CACHE_READ, "totalTokenCount": IN + OUT},
                 "modelVersion": "gemini-2.5-pro"}
        asked = re.search(r"/models/([^/:]+):", path)
        served = ("gemini", path, asked.group(1) if asked else None, reply["usageMetadata"])
        if not stream:
            self.send_json(reply)
            return log_served(*served)
        self.start_sse()
        self.sse(reply)
        log_served(*served)


def main():
    global LOG_DIR
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--log-dir")
    parser.add_argument("--chat-cache-write", action="store_true",
                        help="also put cache_creation/read_input_tokens in Chat Completions usage")
    parser.add_argument("--responses-cache-write", action="store_true",
                        help="also put input_tokens_details.cache_write_tokens in Responses usage")
    parser.add_argument("--retry-after", default="7980", help="retry-after header of a --limit 429")
    parser.add_argument("--limit", choices=["rate", "quota", "auth"],
                        help="answer every request with a 429 usage-limit error (auth: the "
                             "provider's invalid-key error)")
    args = parser.parse_args()
    global LIMIT, CHAT_CACHE_WRITE, RESPONSES_CACHE_WRITE, RETRY_AFTER
    LIMIT = args.limit
    CHAT_CACHE_WRITE = args.chat_cache_write
    RESPONSES_CACHE_WRITE = args.responses_cache_write
    RETRY_AFTER = args.retry_after
    LOG_DIR = args.log_dir
    if LOG_DIR:
        os.makedirs(LOG_DIR, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"model server on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
