"""TensorBoard event files in a job's output dir as training metrics (docs/user/metrics.md): each
scalar (its tag, step and value) a point. Read with TensorBoard's own loader
(`event_file_loader.RawEventFileLoader`, records framed and checked by it; each record decoded by
TensorBoard's `Event` message and `data_compat`), never parsed by hand.

The output dir is the user's area, which the task writes: it is walked and each event file opened
through clusters.userfs (no link followed), and the loader is handed the descriptor's own name
(`/proc/self/fd/N`), so what was checked is what is read. A file's loader is kept open from pass
to pass and goes on where it stopped; what is stored of it (MetricSource: the bytes of whole
records read, the step after its last) lets a restarted sampler skip the records already read
without decoding them, and start over when the file was replaced by a shorter one. A file that
makes no progress over a pass while bytes are left that did not grow, or once its job ended (a
bad checksum, a record cut short, a record that is no Event) is corrupt: counted once, as a bad
line is, and read no more.
"""

from __future__ import annotations

import io
import math
import os
import stat
from dataclasses import dataclass, field

from tensorboard import data_compat
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2
from tensorboard.util import tensor_util

from clusters import userfs
from jobs.protocol.metrics import MAX_NAME_CHARS, Point

EVENT_FILE_MARK = "tfevents"  # TensorBoard's own rule (io_wrapper.IsTensorFlowEventsFile)
MAX_FILES = 64  # event files read in one output dir
MAX_ENTRIES = 5000  # entries of an output dir looked at in one walk
MAX_POINTS = 100_000  # of one file in one pass (the rest the next pass)
MAX_OPEN = 256  # files kept open between passes (the oldest past it closed: read again, skipped undecoded)
RECORD_FRAME = 16  # a record's length (8 bytes), its checksum (4) and its data's checksum (4)


@dataclass
class Progress:
    """What is stored of one event file: the bytes of whole records read, the step after the last
    one, whether it was found corrupt (then it is read no more)."""

    offset: int = 0
    next_step: int = 0
    corrupt: bool = False


@dataclass
class Reading:
    points: list[Point] = field(default_factory=list)
    corrupt: bool = False


def is_event_file(name: str) -> bool:
    return EVENT_FILE_MARK in name


def metric_name(relative: str, tag: str) -> str:
    """A scalar's metric name: its tag, after the folder its file is in below the output dir
    (`eval/loss`): runs written to subfolders, as TensorBoard names them."""
    folder = relative.rpartition("/")[0]
    return f"{folder}/{tag}" if folder else tag


class EventFile:
    """One event file, open, with TensorBoard's loader on its descriptor."""

    def __init__(self, file: io.FileIO):
        self.file = file
        self.inode = os.fstat(file.fileno()).st_ino
        self.loader = RawEventFileLoader(f"/proc/self/fd/{file.fileno()}")
        self.position = 0  # bytes of the records the loader has given
        self.size_seen = -1

    def close(self) -> None:
        self.file.close()

    def size(self) -> int:
        return os.fstat(self.file.fileno()).st_size

    def read(self, relative: str, progress: Progress, *, final: bool = False) -> Reading:
        """The scalars of the records after `progress.offset` (which it moves on). `final`: no
        task writes it any more (bytes left unread will never become a record)."""
        reading = Reading()
        size = self.size()
        before = self.position
        for record in self.loader.Load():
            self.position += len(record) + RECORD_FRAME
            if self.position <= progress.offset:  # read before this loader was made
                continue
            try:
                event = data_compat.migrate_event(event_pb2.Event.FromString(record))
            except Exception:  # (a record whose data is no Event: protobuf's DecodeError and kin)
                reading.corrupt = True
                break
            reading.points.extend(scalars(event, relative))
            progress.offset = self.position
            if len(reading.points) >= MAX_POINTS:
                break
        stuck = self.position == before and size > self.position and (final or size == self.size_seen)
        reading.corrupt = reading.corrupt or stuck
        self.size_seen = size
        if reading.points:
            progress.next_step = max(progress.next_step, max(point.step for point in reading.points) + 1)
        progress.corrupt = reading.corrupt
        return reading


def scalars(event: event_pb2.Event, relative: str) -> list[Point]:
    """An event's scalar values as points (a histogram, an image, a text: not a scalar, left out)."""
    points = []
    for value in event.summary.value:
        if not value.HasField("tensor"):
            continue
        number = _scalar(value.tensor)
        if number is None:
            continue
        name = metric_name(relative, value.tag)
        if math.isfinite(number) and 0 < len(name) <= MAX_NAME_CHARS and 0 <= event.step < 2**63:
            points.append(Point(int(event.step), name, number))
    return points


def _scalar(tensor: object) -> float | None:
    """A tensor's number when it holds one (a shape of (), a number type), else None."""
    try:
        array = tensor_util.make_ndarray(tensor)
    except Exception:  # (a tensor TensorBoard itself cannot read: not a scalar of ours)
        return None
    return float(array) if array.shape == () and array.dtype.kind in "fiu" else None


class EventFiles:
    """The open event files of the jobs being read, by (task id, name below the output dir)."""

    def __init__(self) -> None:
        self.open: dict[tuple[int, str], EventFile] = {}

    def found(self, task_id: int, folder: int, known: dict[str, Progress], prefix: str = "") -> dict[str, EventFile]:
        """The event files below `folder` (a log folder's descriptor), by their names below it after
        `prefix`, opened where new, each with its progress in `known` (added where new; started
        over where the file was replaced); those found corrupt before are left alone."""
        answer: dict[str, EventFile] = {}
        for looked, (relative, parent, name, info) in enumerate(userfs.walk(folder, prefix)):
            if looked >= MAX_ENTRIES or len(answer) >= MAX_FILES:
                break
            if not stat.S_ISREG(info.st_mode) or not is_event_file(name):
                continue
            progress = known.setdefault(relative, Progress())
            if progress.corrupt:
                continue
            event_file = self.open.get((task_id, relative))
            if (event_file is not None and event_file.inode != info.st_ino) or info.st_size < progress.offset:
                self.forget(task_id, relative)
                event_file, progress.offset, progress.next_step = None, 0, 0
            if event_file is None:
                try:
                    event_file = EventFile(userfs.open_file_at(parent, name, shown=relative))
                except (OSError, userfs.UserFsError):  # (gone meanwhile, swapped for a link)
                    continue
                self.open[(task_id, relative)] = event_file
            answer[relative] = event_file
        return answer

    def forget(self, task_id: int, relative: str) -> None:
        event_file = self.open.pop((task_id, relative), None)
        if event_file is not None:
            event_file.close()

    def keep_only(self, task_ids: set[int]) -> None:
        """Close the files of the tasks no longer read, and the oldest past MAX_OPEN (descriptors
        are the sampler's to spare: a file closed is opened again, its records read skipped)."""
        for task_id, relative in [key for key in self.open if key[0] not in task_ids]:
            self.forget(task_id, relative)
        for task_id, relative in list(self.open)[: max(0, len(self.open) - MAX_OPEN)]:
            self.forget(task_id, relative)
