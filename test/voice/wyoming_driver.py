"""Drives Hearth's Wyoming service with the real `wyoming` package (its
AsyncTcpClient and event classes, as Home Assistant uses them), for the tests
in this folder (python-wyoming.ts starts it). One JSON command per line on
stdin, one JSON answer per line on stdout, tagged with the command's id;
commands run concurrently, so one connection can wait for an answer while
another speaks.

  {"id": 1, "op": "connect", "conn": "a", "port": 10700}
  {"id": 2, "op": "describe", "conn": "a"}
  {"id": 3, "op": "transcript", "conn": "a", "text": "...", "context": {...}}
  {"id": 4, "op": "raw", "conn": "a", "hex": "7b..."}     bytes the library would never write
  {"id": 5, "op": "read", "conn": "a", "timeout": 15}    the next event, read by the library
  {"id": 6, "op": "close", "conn": "a"}
"""

import asyncio
import json
import sys

from wyoming.asr import Transcript
from wyoming.client import AsyncTcpClient
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop, NotHandled
from wyoming.info import Describe, Info
from wyoming.version import __version__

clients = {}
out_lock = asyncio.Lock()


async def answer(message):
    async with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def parsed(event):
    """The event as the library's classes read it (what Home Assistant would see)."""
    if Info.is_type(event.type):
        info = Info.from_event(event)
        return {"type": event.type, "data": info.event().data}
    for cls in (Handled, NotHandled):
        if cls.is_type(event.type):
            e = cls.from_event(event)
            return {"type": event.type, "data": {"text": e.text, "context": e.context}}
    if HandledStart.is_type(event.type):
        return {"type": event.type, "data": {"context": HandledStart.from_event(event).context}}
    if HandledChunk.is_type(event.type):
        return {"type": event.type, "data": {"text": HandledChunk.from_event(event).text}}
    if HandledStop.is_type(event.type):
        return {"type": event.type, "data": {}}
    return {"type": event.type, "data": event.data}


async def run(command):
    op = command["op"]
    name = command.get("conn")
    if op == "version":
        return {"version": __version__}
    if op == "connect":
        client = AsyncTcpClient(command.get("host", "127.0.0.1"), command["port"])
        await client.connect()
        clients[name] = client
        return {}
    client = clients[name]
    if op == "describe":
        await client.write_event(Describe().event())
        return {}
    if op == "transcript":
        await client.write_event(Transcript(text=command["text"], context=command.get("context")).event())
        return {}
    if op == "raw":
        client._writer.write(bytes.fromhex(command["hex"]))
        await client._writer.drain()
        return {}
    if op == "read":
        try:
            event = await asyncio.wait_for(client.read_event(), command.get("timeout", 15))
        except asyncio.TimeoutError:
            return {"timeout": True}
        except (ConnectionError, asyncio.IncompleteReadError):
            return {"closed": True}
        return {"closed": True} if event is None else {"event": parsed(event)}
    if op == "close":
        await client.disconnect()
        del clients[name]
        return {}
    raise ValueError(f"unknown op {op}")


async def serve(command):
    try:
        result = await run(command)
        await answer({"id": command["id"], "ok": True, **result})
    except Exception as err:  # the test reads the failure
        await answer({"id": command.get("id"), "ok": False, "error": f"{type(err).__name__}: {err}"})


async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        task = asyncio.create_task(serve(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


asyncio.run(main())
