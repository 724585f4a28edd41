"""The ladder's file: one SQLite database per rules pool, its schema, its one-writer lock and its rows.

Why SQLite: one file that holds the pool, the bots, every game and every test, written in transactions, so a
killed `play` leaves every committed block whole and nothing half-written (a block's games are inserted in one
transaction, `commit_blocks`). Every number the ladder shows is recomputed from these rows.

Never two writers: a writing command (`open_ladder(..., write=True)`) holds an exclusive advisory lock (`flock`) on
the database file itself for as long as it runs (the kernel drops it when the process dies, SIGKILL included); a
second writer is refused with one line (`LadderBusy`). Readers (`show`, `export`, `verify`) need no lock: SQLite
gives them a consistent view between transactions.

Tables (schema `SCHEMA_VERSION`): `meta` (format, schema, the pool's rules, seed, engine version, created), `bots`
(id = the bot's index in every fit, name, spec, sha256, reproducible, reference), `blocks` (number, round, the
bots in slot order, the test it belongs to, planned or done), `games` (per game: block, index in the block, seed,
bots by seat, the 7 category scores per seat, totals, ranks, winners, animal cubes, turns, CPU seconds, package
version, git commit, date, each seat's weights SHA-256), `tests` (a sequential test: its bots, statistic, LLR
method, bounds, verdict, counts and LLR trajectory).
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from harmonies_env.config import GameConfig

#: What `meta.format` says in every ladder file.
FORMAT = "harmonies-ladder"
#: Version of the schema below; a file of another version is refused (nothing is released yet: no migrations).
SCHEMA_VERSION = 1
#: The 7 scoring categories stored per seat (`harmonies_env.scoring.CATEGORIES` without the total).
CATEGORY_COUNT = 7

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL, sha256 TEXT,
                   reproducible INTEGER NOT NULL, reference INTEGER NOT NULL, added TEXT NOT NULL);
CREATE TABLE tests (id INTEGER PRIMARY KEY, new INTEGER NOT NULL REFERENCES bots(id),
                    base INTEGER NOT NULL REFERENCES bots(id), statistic TEXT NOT NULL, method TEXT NOT NULL,
                    bound0 REAL NOT NULL, bound1 REAL NOT NULL, alpha REAL NOT NULL, beta REAL NOT NULL,
                    max_games INTEGER NOT NULL,
                    verdict TEXT, llr REAL, games INTEGER NOT NULL DEFAULT 0, counts TEXT, trajectory TEXT,
                    started TEXT NOT NULL, finished TEXT);
CREATE TABLE blocks (number INTEGER PRIMARY KEY, round INTEGER, bots TEXT NOT NULL,
                     test INTEGER REFERENCES tests(id), done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE games (id INTEGER PRIMARY KEY, block INTEGER NOT NULL REFERENCES blocks(number),
                    game_index INTEGER NOT NULL, seed INTEGER NOT NULL, bots TEXT NOT NULL, categories TEXT NOT NULL,
                    totals TEXT NOT NULL, ranks TEXT NOT NULL, winners TEXT NOT NULL, animal_cubes TEXT NOT NULL,
                    turns INTEGER NOT NULL, cpu_seconds REAL NOT NULL, version TEXT NOT NULL, git_commit TEXT,
                    played TEXT NOT NULL, sha256 TEXT NOT NULL, UNIQUE (block, game_index));
"""


class LadderError(ValueError):
    """Bad input about a ladder file (not a ladder, another schema, a pool mismatch, an unknown bot): one line."""


class LadderBusy(LadderError):
    """Another process is writing this ladder (`play`, `test`, `add`): never two writers."""


@dataclass(frozen=True)
class Bot:
    """A bot of the ladder: `id` is its index in every fit (0 is `random`, the anchor)."""

    id: int
    name: str
    spec: str
    sha256: str | None
    reproducible: bool
    reference: bool


@dataclass(frozen=True)
class Pool:
    """The rules every game of the ladder is played under, its base seed and the engine version it was made with."""

    config: GameConfig
    seed: int
    version: str


def now() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def engine_version() -> str:
    """The engine's version (the package's): part of the pool, since another engine may score other games."""
    import harmonies_env

    return str(harmonies_env.__version__)


class Ladder:
    """An open ladder file: the pool, its bots, and the rows (see the module docstring). Use `open_ladder`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int | None):
        self.path = path
        self.conn = conn
        self._lock_fd = lock_fd
        self.pool = self._read_pool()

    # ------------------------------------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the database and release the writer's lock."""
        self.conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> "Ladder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def writable(self) -> bool:
        return self._lock_fd is not None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (`BEGIN IMMEDIATE`): all of it is committed, or none (an exception rolls back)."""
        if not self.writable:
            raise LadderError(f"{self.path}: opened for reading only")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()

    # ------------------------------------------------------------------------------------------------ the pool

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def _read_pool(self) -> Pool:
        m = self.meta()
        try:
            config = GameConfig(int(m["players"]), m["side"], m["spirits"] == "1", m["river_loops"])
            return Pool(config, int(m["seed"]), m["version"])
        except (KeyError, ValueError) as e:
            raise LadderError(f"{self.path}: a damaged ladder (its pool is unreadable: {e})") from None

    def check_engine(self) -> None:
        """LadderError when this engine is not the one the pool was made with (its games would not be comparable)."""
        if self.pool.version != engine_version():
            raise LadderError(f"{self.path}: pool mismatch: its games were played by engine {self.pool.version}, "
                              f"this is {engine_version()} (start a new ladder for this engine)")

    # ------------------------------------------------------------------------------------------------ bots

    def bots(self) -> list[Bot]:
        rows = self.conn.execute("SELECT id, name, spec, sha256, reproducible, reference FROM bots ORDER BY id")
        return [Bot(int(i), n, s, h, bool(r), bool(f)) for i, n, s, h, r, f in rows.fetchall()]

    def bot(self, key: str) -> Bot:
        """The bot named `key`, else the one whose spec is `key`; LadderError naming the known ones."""
        bots = self.bots()
        for b in bots:
            if b.name == key:
                return b
        for b in bots:
            if b.spec == key:
                return b
        raise LadderError(f"no bot {key!r} in {self.path} (bots: {', '.join(b.name for b in bots)})")

    def add_bot(self, name: str, spec: str, sha256: str | None, reproducible: bool, reference: bool) -> Bot:
        """Insert a bot (its id is the next index); LadderError if the name is taken."""
        if any(b.name == name for b in self.bots()):
            raise LadderError(f"{self.path} already has a bot named {name!r} (give another --name)")
        with self.transaction() as c:
            n = c.execute("SELECT COUNT(*) FROM bots").fetchone()[0]
            c.execute("INSERT INTO bots VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (n, name, spec, sha256, int(reproducible), int(reference), now()))
        return self.bot(name)

    # ------------------------------------------------------------------------------------------------ blocks

    def next_block(self) -> int:
        """The number the next new block takes."""
        row = self.conn.execute("SELECT MAX(number) FROM blocks").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def plan_blocks(self, blocks: Sequence[tuple[int, Sequence[int]]], round_: int | None,
                    test: int | None = None) -> None:
        """Record blocks to play, (number, bot ids in slot order) each, in one transaction: what a killed `play`
        finishes when run again."""
        with self.transaction() as c:
            c.executemany("INSERT INTO blocks (number, round, bots, test, done) VALUES (?, ?, ?, ?, 0)",
                          [(int(b), round_, json.dumps([int(x) for x in bots]), test) for b, bots in blocks])

    def pending_blocks(self) -> list[tuple[int, tuple[int, ...]]]:
        """The planned blocks not yet played (ladder rounds, not tests), lowest number first."""
        rows = self.conn.execute("SELECT number, bots FROM blocks WHERE done = 0 AND test IS NULL ORDER BY number")
        return [(int(n), tuple(json.loads(b))) for n, b in rows.fetchall()]

    def rounds(self) -> int:
        """How many pairing rounds were planned so far."""
        row = self.conn.execute("SELECT MAX(round) FROM blocks").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def commit_blocks(self, blocks: dict[int, Sequence[dict[str, Any]]], test: int | None = None,
                      bots: Sequence[int] | None = None) -> None:
        """Store finished blocks' games (number -> rows of `store.GAME_COLUMNS`) and mark them done, in one
        transaction (each block whole, or none of them: one fsync for a worker's batch of blocks); blocks not
        planned before (a test's) are inserted with `bots`."""
        marks = ", ".join("?" * len(GAME_COLUMNS))
        with self.transaction() as c:
            for number, games in sorted(blocks.items()):
                if bots is not None:
                    c.execute("INSERT INTO blocks (number, round, bots, test, done) VALUES (?, NULL, ?, ?, 1)",
                              (int(number), json.dumps([int(x) for x in bots]), test))
                else:
                    c.execute("UPDATE blocks SET done = 1 WHERE number = ?", (int(number),))
                c.executemany(f"INSERT INTO games ({', '.join(GAME_COLUMNS)}) VALUES ({marks})",
                              [tuple(_encode(g[k]) for k in GAME_COLUMNS) for g in games])

    # ------------------------------------------------------------------------------------------------ games

    def games(self, where: str = "", args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Stored games (dicts of `GAME_COLUMNS` plus `id`, lists decoded), in block then index order."""
        cols = ("id", *GAME_COLUMNS)
        rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM games {where} ORDER BY block, game_index", args)
        return [{k: (json.loads(v) if k in JSON_COLUMNS else v) for k, v in zip(cols, r)} for r in rows.fetchall()]

    def game_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    # ------------------------------------------------------------------------------------------------ tests

    def start_test(self, new: int, base: int, statistic: str, method: str, bounds: tuple[float, float],
                   alpha: float, beta: float, max_games: int) -> int:
        with self.transaction() as c:
            cur = c.execute("INSERT INTO tests (new, base, statistic, method, bound0, bound1, alpha, beta, max_games, "
                            "started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (new, base, statistic, method, bounds[0], bounds[1], alpha, beta, max_games, now()))
            return int(cur.lastrowid)

    def unfinished_test(self, new: int, base: int, statistic: str, method: str, bounds: tuple[float, float],
                        alpha: float, beta: float, max_games: int) -> int | None:
        """The id of a test with exactly these settings that was stopped before it finished (the latest), or None."""
        row = self.conn.execute(
            "SELECT MAX(id) FROM tests WHERE finished IS NULL AND new = ? AND base = ? AND statistic = ? AND "
            "method = ? AND bound0 = ? AND bound1 = ? AND alpha = ? AND beta = ? AND max_games = ?",
            (new, base, statistic, method, bounds[0], bounds[1], alpha, beta, max_games)).fetchone()
        return None if row[0] is None else int(row[0])

    def test_blocks(self, test: int) -> dict[int, list[dict[str, Any]]]:
        """A test's stored blocks: number -> its games, in block order."""
        out: dict[int, list[dict[str, Any]]] = {}
        for g in self.games("WHERE block IN (SELECT number FROM blocks WHERE test = ?)", (int(test),)):
            out.setdefault(int(g["block"]), []).append(g)
        return out

    def finish_test(self, test: int, verdict: str | None, llr: float, games: int, counts: Any,
                    trajectory: Sequence[float], finished: bool = True) -> None:
        """Record a test's result (`finished`), or its progress so far (a stopped test, resumed by the same
        command: verdict and finish time left empty)."""
        with self.transaction() as c:
            c.execute("UPDATE tests SET verdict = ?, llr = ?, games = ?, counts = ?, trajectory = ?, finished = ? "
                      "WHERE id = ?", ((verdict or "undecided") if finished else None, float(llr), int(games),
                                       json.dumps(counts), json.dumps([float(x) for x in trajectory]),
                                       now() if finished else None, int(test)))

    def tests(self) -> list[dict[str, Any]]:
        cols = ("id", "new", "base", "statistic", "method", "bound0", "bound1", "alpha", "beta", "max_games", "verdict",
                "llr", "games", "counts", "trajectory", "started", "finished")
        rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM tests ORDER BY id").fetchall()
        out = []
        for r in rows:
            d = dict(zip(cols, r))
            d["counts"] = json.loads(d["counts"]) if d["counts"] else None
            d["trajectory"] = json.loads(d["trajectory"]) if d["trajectory"] else []
            out.append(d)
        return out


#: A game row's columns (besides its id); lists are stored as JSON text.
GAME_COLUMNS = ("block", "game_index", "seed", "bots", "categories", "totals", "ranks", "winners", "animal_cubes",
                "turns", "cpu_seconds", "version", "git_commit", "played", "sha256")
JSON_COLUMNS = frozenset({"bots", "categories", "totals", "ranks", "winners", "animal_cubes", "sha256"})


def _encode(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, (list, tuple)) else v


def _lock(path: Path) -> int:
    """An exclusive advisory lock on the file (held until the fd is closed or the process dies); LadderBusy if held."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LadderBusy(f"{path}: another harmonies ladder command is writing this ladder (never two writers): "
                         f"wait for it to end, or stop it") from None
    return fd


def _check_ladder(path: Path, conn: sqlite3.Connection) -> None:
    """LadderError unless `conn` is a ladder of this schema."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    except sqlite3.DatabaseError as e:
        raise LadderError(f"{path}: not a ladder ({e})") from None
    if meta.get("format") != FORMAT:
        raise LadderError(f"{path}: not a ladder (no {FORMAT} record; make one with `harmonies ladder init`)")
    if meta.get("schema") != str(SCHEMA_VERSION):
        raise LadderError(f"{path}: a ladder of schema {meta.get('schema')!r}; this version reads schema "
                          f"{SCHEMA_VERSION}")


def open_ladder(path: str | Path, write: bool = False) -> Ladder:
    """An existing ladder file, checked (LadderError: missing, not a ladder, another schema); `write`: also take
    the writer's lock (LadderBusy when another process holds it). Nothing is written here, except that a
    transaction a killed writer left half done (its rollback journal beside the file) is rolled back: the file is
    then as its last commit left it."""
    p = Path(path)
    if not p.is_file():
        raise LadderError(f"{p}: no such ladder (make one with `harmonies ladder init {p}`)")
    fd = _lock(p) if write else None
    try:
        recover = p.with_name(p.name + "-journal").exists()  # read-only, SQLite could not roll it back
        check = sqlite3.connect(p) if recover else sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
        try:
            _check_ladder(p, check)
        finally:
            check.close()
        conn = sqlite3.connect(p, isolation_level=None, timeout=60) if write else \
            sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        return Ladder(p, conn, fd)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise


def create_ladder(path: str | Path, config: GameConfig, seed: int) -> Ladder:
    """A new ladder file for the pool `config` (LadderError if the file exists: a ladder of other rules is a pool
    mismatch, any other file is left alone), written whole or not at all; returned open for writing."""
    p = Path(path)
    if p.exists():
        try:
            with open_ladder(p) as old:
                pool = old.pool
        except LadderError:
            raise LadderError(f"{p}: exists and is not a ladder (refusing to overwrite it)") from None
        if pool.config != config:
            raise LadderError(f"{p}: pool mismatch: it is a ladder of {describe(pool.config)}, not "
                              f"{describe(config)}")
        raise LadderError(f"{p}: already a ladder of {describe(config)} (add bots with `harmonies ladder add`)")
    if not p.parent.is_dir():
        raise LadderError(f"{p}: no folder {p.parent}")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.executescript("BEGIN;" + SCHEMA + "COMMIT;")
            meta = {"format": FORMAT, "schema": str(SCHEMA_VERSION), "players": str(config.num_players),
                    "side": config.side, "spirits": str(int(config.spirits)), "river_loops": config.river_loops,
                    "seed": str(int(seed)), "version": engine_version(), "created": now()}
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.link(tmp, p)  # fails if the file appeared meanwhile: never overwritten
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return open_ladder(p, write=True)


def describe(config: GameConfig) -> str:
    """The pool's rules in words: '2 players, side A, no Spirits, rulebook rivers'."""
    return (f"{config.num_players} players, side {config.side}, {'Spirits' if config.spirits else 'no Spirits'}, "
            f"{config.river_loops} rivers")


__all__ = ["Bot", "CATEGORY_COUNT", "FORMAT", "GAME_COLUMNS", "Ladder", "LadderBusy", "LadderError", "Pool",
           "SCHEMA_VERSION", "create_ladder", "describe", "engine_version", "now", "open_ladder"]
