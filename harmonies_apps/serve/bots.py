"""The play server's bots' worker threads: one decision at a time, in turn across clients (`BotScheduler`)."""
from __future__ import annotations

import threading
from collections import Counter, deque
from typing import Any

from .limits import BOTS_PER_CLIENT


class BotScheduler:
    """The worker threads in which bots move, shared fairly: one job is ONE bot decision, jobs are taken round-robin
    across clients (then across a client's games, in the order they asked), and at most `per_client` decisions of one
    client run at once. A client with twelve games of slow bots therefore takes one worker, and another client's
    bot still moves as soon as a worker finishes its current decision.

    `submit(client, job)`: `job()` makes one decision and returns None when it is done, else the seconds to wait
    before its next decision (the bot delay after a turn); it is then queued again, at the back."""

    def __init__(self, workers: int = 2, per_client: int = BOTS_PER_CLIENT):
        self.per_client = int(per_client)
        self.cond = threading.Condition()
        self.queues: dict[str, Any] = {}  # client -> deque of jobs waiting
        self.order: Any = deque()  # clients with jobs waiting, in turn
        self.running: Counter[str] = Counter()
        self.closed = False
        self.threads = [threading.Thread(target=self._work, name=f"harmonies-bot-{i}", daemon=True)
                        for i in range(int(workers))]
        for t in self.threads:
            t.start()

    def submit(self, client: str, job: Any) -> None:
        with self.cond:
            if self.closed:
                return
            if client not in self.queues:
                self.queues[client] = deque()
                self.order.append(client)
            self.queues[client].append(job)
            self.cond.notify()

    def _take(self) -> tuple[str, Any] | None:
        """The next (client, job) in turn whose client is under its cap (caller holds cond), or None."""
        for _ in range(len(self.order)):
            client = self.order[0]
            self.order.rotate(-1)
            if self.running[client] < self.per_client:
                queue = self.queues[client]
                job = queue.popleft()
                if not queue:
                    del self.queues[client]
                    self.order.remove(client)
                return client, job
        return None

    def _work(self) -> None:
        while True:
            with self.cond:
                while not self.closed and (found := self._take()) is None:
                    self.cond.wait()
                if self.closed:
                    return
                client, job = found
                self.running[client] += 1
            try:
                again = job()
            finally:
                with self.cond:
                    self.running[client] -= 1
                    self.cond.notify_all()
            if again is not None:
                if again > 0:
                    timer = threading.Timer(again, self.submit, (client, job))
                    timer.daemon = True
                    timer.start()
                else:
                    self.submit(client, job)

    def shutdown(self) -> None:
        """Stop taking jobs (a decision under way finishes in its daemon thread)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
