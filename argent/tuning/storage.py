"""Where a study lives: its storage (SQLite in the study folder, or any SQLAlchemy URL), sampler
and pruner, and opening it with a check that the stored study is the same study."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy

from argent.config import TrackingConfig
from argent.io import ArgentError
from argent.runs import results_tracking_uri as default_uri
from argent.tuning.config import PrunerConfig, SamplerConfig, TuneConfig

__all__ = [
    "TuneError",
    "StoreLocked",
    "StudySpec",
    "study_spec",
    "storage_for",
    "make_sampler",
    "make_pruner",
    "open_study",
    "load_existing_study",
    "safe_url",
]


log = logging.getLogger("argent.tune")

QUICK_WAIT_MS = 2000  # a lock held longer than this is another process's work, not a worker's transaction


class TuneError(ArgentError, RuntimeError):
    """The study cannot go on (storage holds a different study, an objective metric is unknown, ...)."""


class StoreLocked(BaseException):
    """The SQLite study store stayed locked by another process for ``tune.store_wait`` seconds. A
    BaseException, so that it passes through Optuna's handlers (which catch Exception: they would fail
    the trial with a traceback, try the locked store again, and end in a StorageInternalError) to
    ``argent tune``'s one line; the trial in progress stays RUNNING, and is retried once stale."""


@dataclass
class StudySpec:
    """Everything a worker needs to join a study: the config plus where things live."""

    tune: TuneConfig
    out_dir: Path
    storage_url: str
    fingerprint: dict[str, Any] = field(default_factory=dict)
    tracking: TrackingConfig = field(default_factory=lambda: TrackingConfig(enabled=False))

    @property
    def experiment(self) -> str:
        return f"{self.tracking.experiment}-tune-{self.tune.study}"


def study_spec(
    tune: TuneConfig,
    out_dir: str | Path,
    tracking: TrackingConfig | None = None,
    results_dir: str | Path = "results",
    fingerprint: dict[str, Any] | None = None,
) -> StudySpec:
    """Resolve storage (default: SQLite in ``out_dir``) and the MLflow URI (default: under ``results_dir``)."""
    out = Path(out_dir).resolve()
    storage = tune.storage or f"sqlite:///{out / 'optuna.db'}"
    tracking = dataclasses.replace(tracking) if tracking else TrackingConfig(enabled=False)
    if tracking.enabled and not tracking.uri:
        tracking.uri = default_uri(Path(results_dir))
    return StudySpec(tune=tune, out_dir=out, storage_url=storage,
                     fingerprint=fingerprint if fingerprint is not None else tune.fingerprint(), tracking=tracking)


def quiet_optuna() -> None:
    """Optuna's experimental-feature notices and per-trial INFO lines would drown our log."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def storage_for(spec: StudySpec, stale_trial_callback: Any = None) -> optuna.storages.RDBStorage:
    """An ``RDBStorage``; with heartbeats (``tune.heartbeat_interval`` > 0) when a callback is given.

    Optuna's ``study.optimize`` beats the heart of the running trial; any worker that starts a
    trial (or waits for one) fails trials whose heart stopped, and ``stale_trial_callback``
    re-queues them.
    """
    # SQLite: wait for a busy database instead of failing at once (several workers write to it); a
    # lock held by another process is waited for up to tune.store_wait, saying so (begin_immediate).
    wait = spec.tune.store_wait
    engine = {"connect_args": {"timeout": wait}} if spec.storage_url.startswith("sqlite") else {"pool_pre_ping": True}
    kwargs: dict[str, Any] = {}
    if stale_trial_callback is not None and spec.tune.heartbeat_interval:
        new_api = hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback")  # Optuna >= 4.9 renamed the option
        kwargs = {"heartbeat_interval": spec.tune.heartbeat_interval, "grace_period": spec.tune.grace_period or None,
                  "heartbeat_stale_trial_callback" if new_api else "failed_trial_callback": stale_trial_callback}
    if spec.storage_url.startswith("sqlite:///"):
        db = Path(spec.storage_url[len("sqlite:///"):])
        db.parent.mkdir(parents=True, exist_ok=True)
        wait_for_store(db, wait)  # Optuna's set-up would wait in silence, then fail with a traceback
    quiet_optuna()
    for attempt in range(5):
        try:
            storage = optuna.storages.RDBStorage(spec.storage_url, engine_kwargs=engine, **kwargs)
            serialize_sqlite_transactions(storage.engine, wait)
            return storage
        except sqlalchemy.exc.SQLAlchemyError as err:
            if is_locked(err):
                raise _locked_for(spec.storage_url, wait) from None  # waited already: no second round
            problem = damaged_store(spec.storage_url.removeprefix("sqlite:///"), err) \
                if spec.storage_url.startswith("sqlite:///") else None
            if problem is not None:
                raise problem from None
            # Workers that start together on a new database race to create its tables; the loser's
            # insert of the schema version fails. Retrying finds the tables made. An unreachable
            # server or a bad URL fails every attempt: say which storage and what to check.
            if attempt == 4:
                reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
                raise TuneError(f"cannot open the study storage {safe_url(spec.storage_url)} (tune.storage): "
                                f"{reason}. Check that the database server runs and the URL is right.") from None
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def is_locked(err: BaseException) -> bool:
    """SQLite's "database is locked" (another connection holds the lock past the busy timeout)."""
    return "database is locked" in str(getattr(err, "orig", None) or err)


def _locked_for(where: str, wait: float) -> StoreLocked:
    return StoreLocked(f"{where}: the study store stayed locked by another process for {wait:g} s "
                       f"(tune.store_wait); stopped. Let that process finish (`fuser` on the file names it), "
                       f"or raise tune.store_wait, and run again")


def begin_immediate(execute: Callable[[str], Any], where: str, wait: float) -> None:
    """Begin a transaction holding SQLite's write lock (``BEGIN IMMEDIATE``). Another worker's
    transaction ends within ``QUICK_WAIT_MS``; a lock held longer (another process: a backup, a
    hand-run sqlite3, a stuck job) is waited for up to ``wait`` seconds, saying so once, then
    ``StoreLocked``. ``execute`` runs one SQL statement on the connection."""
    execute(f"PRAGMA busy_timeout = {QUICK_WAIT_MS}")
    try:
        execute("BEGIN IMMEDIATE")
    except Exception as err:  # noqa: BLE001 - the driver's or SQLAlchemy's OperationalError
        if not is_locked(err):
            raise
        log.warning("%s: the study store is locked by another process; waiting up to %g s for it (tune.store_wait)",
                    where, wait)
        execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            execute("BEGIN IMMEDIATE")
        except Exception as again:  # noqa: BLE001
            if not is_locked(again):
                raise
            raise _locked_for(where, wait) from None
        log.warning("%s: the study store is free again; going on", where)
    execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")  # the transaction's own statements wait as long


def _one_line_in_threads() -> None:
    """Make a ``StoreLocked`` in a thread (Optuna's heartbeat) one log line, not a traceback (the main
    thread says the same when it next reaches the store); any other exception goes to the hook before."""
    previous = threading.excepthook
    if getattr(previous, "argent_store_locked", False):
        return

    def hook(args: Any) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, StoreLocked):
            log.warning("%s", args.exc_value)
        else:
            previous(args)

    hook.argent_store_locked = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def damaged_store(db: Path | str, err: BaseException) -> TuneError | None:
    """One line for a SQLite study store that is no store (garbage, a half-copied ``optuna.db``) or that
    cannot be written (a read-only file or folder: Optuna said "StorageInternalError ... exceeding max
    length"); None for any other error."""
    text = str(getattr(err, "orig", None) or err)
    if "not a database" in text or "malformed" in text:
        return TuneError(f"{db}: not a readable study store ({text.splitlines()[0]}): the file is damaged or was "
                         f"copied part-way. Move it aside (or restore a whole copy) and run again; without it the "
                         f"study starts over")
    if "readonly" in text or "read-only" in text or "unable to open database file" in text:
        return read_only_store(Path(db))
    return None


def read_only_store(db: Path) -> TuneError:
    return TuneError(f"{db}: the study store, or its folder {db.parent}, is read-only for this process: SQLite "
                     f"writes the store and a journal beside it. Make {db.parent} writable, or set tune.storage "
                     f"to a store in a writable place, and run again")


def check_writable(db: Path) -> None:
    """A SQLite store is written with a journal beside it: its folder, and the file when it exists, must be
    writable (Optuna fails on the first commit with a misleading StorageInternalError otherwise)."""
    folder_ok = os.access(db.parent, os.W_OK | os.X_OK)
    if not folder_ok or (db.exists() and not os.access(db, os.R_OK | os.W_OK)):
        raise read_only_store(db)


def wait_for_store(db: Path, wait: float) -> None:
    """Return once the SQLite file ``db`` can be written (``begin_immediate``); nothing to wait for
    when it does not exist yet. A store that is not a SQLite database (garbage, half copied) or cannot be
    written is one ``TuneError`` naming it (``damaged_store``), not sqlite3's traceback."""
    check_writable(db)
    if not db.is_file():
        return
    import sqlite3

    try:
        connection = sqlite3.connect(db, isolation_level=None)
        try:
            begin_immediate(connection.execute, str(db), wait)
            # BEGIN reads the header only: a half-copied store is found when its tables are read
            connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
            connection.execute("PRAGMA quick_check").fetchall()
            connection.execute("ROLLBACK")
        finally:
            connection.close()
    except sqlite3.DatabaseError as err:
        problem = damaged_store(db, err)
        if problem is None:
            raise
        raise problem from None


def serialize_sqlite_transactions(engine: sqlalchemy.engine.Engine, wait: float = 600) -> None:
    """Make every transaction on ``engine`` (SQLite) take the database's write lock when it begins.

    Optuna pops a queued trial (``study.ask``) by reading its state and setting it RUNNING in one
    transaction, and relies on ``SELECT ... FOR UPDATE`` to make that atomic. SQLite has no row
    locks, and Python's sqlite3 driver starts a transaction only at the first write, so two workers
    could both read WAITING and both take the trial (then one of them fails telling it; the budget's
    slots are queued trials). ``BEGIN IMMEDIATE`` at the start of each transaction serializes them:
    the second worker reads RUNNING and moves on. This is SQLAlchemy's documented pysqlite recipe.
    A lock another process holds is waited for up to ``wait`` seconds, saying so (``begin_immediate``).
    Other databases, and an in-memory SQLite (one process's own), are left as they are.
    """
    if engine.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return

    def driver_autocommit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy, not the driver, says when a transaction begins

    where = str(engine.url.database)
    _one_line_in_threads()

    def begin(connection: sqlalchemy.engine.Connection) -> None:
        begin_immediate(connection.exec_driver_sql, where, wait)

    sqlalchemy.event.listen(engine, "connect", driver_autocommit)
    sqlalchemy.event.listen(engine, "begin", begin)
    engine.dispose()  # connections pooled while Optuna made its tables lack the hooks


def make_sampler(cfg: SamplerConfig, offset: int = 0) -> optuna.samplers.BaseSampler:
    seed = cfg.seed + offset
    if cfg.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=cfg.n_startup_trials, constant_liar=cfg.constant_liar)


def make_pruner(cfg: PrunerConfig) -> optuna.pruners.BasePruner:
    common = dict(n_startup_trials=cfg.n_startup_trials, n_warmup_steps=cfg.n_warmup_steps,
                  interval_steps=cfg.interval_steps, n_min_trials=cfg.n_min_trials)
    if cfg.name == "median":
        return optuna.pruners.MedianPruner(**common)
    if cfg.name == "percentile":
        return optuna.pruners.PercentilePruner(cfg.percentile, **common)
    return optuna.pruners.NopPruner()


def open_study(spec: StudySpec, storage: Any, sampler_offset: int = 0) -> optuna.Study:
    """Create the study in its storage or join it; refuse one made with another fingerprint."""
    quiet_optuna()
    tune = spec.tune
    # create_study(load_if_exists=True) is safe when several workers start at once.
    study = optuna.create_study(
        storage=storage, study_name=tune.study, direction=tune.direction,
        sampler=make_sampler(tune.sampler, sampler_offset), pruner=make_pruner(tune.pruner), load_if_exists=True,
    )
    stored = study.user_attrs.get("argent_fingerprint")
    if stored is None:
        study.set_user_attr("argent_fingerprint", spec.fingerprint)
    elif stored != json.loads(json.dumps(spec.fingerprint)):
        raise TuneError(
            f"study {tune.study!r} in {safe_url(spec.storage_url)} was made with another tune/run config "
            f"(space, objective, base variant, training settings or data differ); its trials are not "
            f"comparable. Use a new --study name, or delete the study's storage to start over."
        )
    direction = study.direction.name.lower()
    if direction != tune.direction:
        raise TuneError(f"study {tune.study!r} was created to {direction}, the config says {tune.direction}")
    return study


def load_existing_study(spec: StudySpec) -> optuna.Study:
    """The stored study (read-only use: export); a clear error when it does not exist."""
    quiet_optuna()
    missing = TuneError(f"no study {spec.tune.study!r} in {safe_url(spec.storage_url)}; run argent tune first")
    if spec.storage_url.startswith("sqlite:///") and not Path(spec.storage_url[len("sqlite:///"):]).is_file():
        raise missing  # do not leave an empty database behind
    try:
        return optuna.load_study(study_name=spec.tune.study, storage=storage_for(spec))
    except KeyError:
        raise missing from None


def safe_url(url: str) -> str:
    """A storage URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
