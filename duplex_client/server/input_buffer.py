"""The session's input side: unit assembly, the pending-input budget, the open turn, the VAD."""

from __future__ import annotations

from duplex_client.framing.units import UnitGrid
from duplex_client.server import ids
from duplex_client.server.assembler import FramePack, Unit, UnitAssembler
from duplex_client.server.conversation import Turn
from duplex_client.server.overlap import OverlapPolicy
from duplex_client.server.profiles import Profile
from duplex_client.server.settings import SessionSettings
from duplex_client.server.vad_turns import VadTurns


class ManualQueue:
    """Units the manual lane holds back from the model until a commit; they stay charged."""

    def __init__(self) -> None:
        self._units: list[Unit] = []
        self._charge = 0

    @property
    def charge(self) -> int:
        """Bytes the held units count against the pending-input budget."""
        return self._charge

    def __bool__(self) -> bool:
        """Whether any unit is held."""
        return bool(self._units)

    def hold(self, unit: Unit) -> None:
        """Hold a unit (charged)."""
        self._units.append(unit)
        self._charge += unit.charge

    def take(self) -> list[Unit]:
        """Every held unit, in order (released)."""
        units, self._units, self._charge = self._units, [], 0
        return units

    def keep(self, kept: set[int]) -> None:
        """Release every unit whose `id` is not in `kept`."""
        self._units = [u for u in self._units if id(u) in kept]
        self._charge = sum(u.charge for u in self._units)


class InputBuffer:
    """Accepted input not yet sealed into a turn, and the byte budget it counts against.

    The budget is, by construction, the assembler's buffered bytes plus the manual queue's
    charge: nothing charges or releases it by hand.
    """

    def __init__(self, profile: Profile, settings: SessionSettings, limit: int) -> None:
        self._profile = profile
        self._limit = limit
        self._assembler = self._new_assembler(settings)
        self._queue = ManualQueue()
        self._turn_units: list[Unit] = []
        #: The open turn's latest frame-bearing unit the engine decided on with its images.
        self._seen_images: Unit | None = None
        self._turn_item_id: str | None = None
        self._next_turn_id = 1
        self._audio_started = False
        #: Server-side VAD (profiles with one, e.g. joyai with the speech engine).
        self.vad = VadTurns(settings) if profile.has_server_vad else None
        #: The overlap rule and the overlapping speech it counted (made on first use).
        self.overlap: OverlapPolicy | None = None

    def _new_assembler(self, settings: SessionSettings) -> UnitAssembler:
        grid = UnitGrid(
            first_unit_ms=self._profile.first_unit_ms,
            chunk_period_ms=self._profile.chunk_period_ms,
            sample_rate_hz=settings.input_rate,
        )
        return UnitAssembler(grid, settings.bytes_per_sample)

    # --- reads ---

    @property
    def held_bytes(self) -> int:
        """The pending-input charge: buffered PCM, queued frames and manual-lane units."""
        return self._assembler.pending_bytes + self._queue.charge

    def fits(self, extra: int) -> bool:
        """Whether `extra` more bytes stay within the pending-input limit."""
        return self.held_bytes + extra <= self._limit

    @property
    def audio_end_ms(self) -> int:
        """Cumulative accepted audio, in ms."""
        return self._assembler.audio_end_ms

    @property
    def units_emitted(self) -> int:
        """Units emitted so far (the next unit's `unit_index`)."""
        return self._assembler.next_unit_index

    @property
    def partial_ms(self) -> int:
        """Audio of the open, partly filled unit, in ms."""
        assembler = self._assembler
        return assembler.to_ms(assembler.partial_bytes // assembler.bps)

    @property
    def audio_started(self) -> bool:
        """Whether any audio was accepted (the input format is then fixed)."""
        return self._audio_started

    @property
    def open_units(self) -> tuple[Unit, ...]:
        """The open (uncommitted) turn's units."""
        return tuple(self._turn_units)

    @property
    def next_turn_id(self) -> int:
        """The id the next sealed turn gets."""
        return self._next_turn_id

    @property
    def turn_item_id(self) -> str | None:
        """The open turn's item id, once something (a VAD start, a partial commit) named it."""
        return self._turn_item_id

    def has_input(self) -> bool:
        """Whether anything uncommitted or retained could be committed."""
        a = self._assembler
        return bool(self._turn_units or a.partial_bytes or a.queued_frames or self._queue)

    def duration_ms(self, pcm: bytes, settings: SessionSettings) -> int:
        """The duration of `pcm` at the input rate."""
        return self._assembler.to_ms(len(pcm) // settings.bytes_per_sample)

    # --- changes ---

    def reformat(self, old: SessionSettings, new: SessionSettings) -> None:
        """Follow a settings change: a new grid on a format/rate change (unit indices go on)."""
        if (new.input_format, new.input_rate) != (old.input_format, old.input_rate):
            units_so_far = self._assembler.next_unit_index
            self._assembler = self._new_assembler(new)
            self._assembler.next_unit_index = units_so_far
        if self.vad is not None:
            self.vad.configure(new)

    def padding_bytes(self) -> int:
        """Zero PCM bytes that would complete the open, partly filled unit (0: none open)."""
        a = self._assembler
        if not a.partial_bytes:
            return 0
        return a.unit_samples(a.next_audio_unit) * a.bps - a.partial_bytes

    def add_audio(self, pcm: bytes, speech: bool, frames: FramePack | None) -> list[Unit]:
        """Buffer one append's PCM (and frames); the units it closed."""
        self._audio_started = True
        return self._assembler.add_audio(pcm, speech, frames)

    def add_vision(self, frames: FramePack) -> Unit:
        """A frame-only append: one VISION unit."""
        return self._assembler.add_vision(frames)

    def accept(self, units: list[Unit], *, hold: bool) -> list[Unit]:
        """Add units to the open turn; held (manual lane) or returned for the model pipeline.

        A unit the pipeline takes is decided on with its images as it arrives, so the open
        turn keeps the images of its latest such unit only (the others keep their count and
        digests): a turn's view shows its latest image, and a stream that never commits would
        otherwise hold every frame it sent.
        """
        for unit in units:
            if not hold and unit.frames is not None and unit.frames.frames:
                self._let_go_of_seen_images()
                self._seen_images = unit
            self._turn_units.append(unit)
        if not hold:
            return units
        for unit in units:
            self._queue.hold(unit)
        return []

    def _let_go_of_seen_images(self) -> None:
        """Replace the last seen frame-bearing unit in the open turn by its image-less copy."""
        seen, self._seen_images = self._seen_images, None
        turn = self._turn_units
        for i in range(len(turn) - 1, -1, -1):
            if turn[i] is seen:
                turn[i] = turn[i].without_images()
                return

    def release_queue(self) -> list[Unit]:
        """Take the manual-lane queue (the units go to the model)."""
        return self._queue.take()

    def name_turn(self) -> str:
        """The open turn's item id, minted on first use."""
        self._turn_item_id = self._turn_item_id or ids.item_id()
        return self._turn_item_id

    def seal(self, is_speech: bool | None) -> tuple[list[Unit], Turn]:
        """A final commit: flush the partial unit; (units for the model, the sealed turn)."""
        to_model = self._queue.take()
        residual = self._assembler.flush()
        if residual is not None:
            self._turn_units.append(residual)
            to_model.append(residual)
        units, self._turn_units = self._turn_units, []
        self._seen_images = None
        if self.vad is not None:
            self.vad.turn_sealed()
        speech = any(u.speech for u in units) and is_speech is not False
        turn = Turn(
            turn_id=self._next_turn_id, item_id=self.name_turn(), units=units, speech=speech
        )
        self._next_turn_id += 1
        self._turn_item_id = None
        return to_model, turn

    def clear(self) -> None:
        """Drop buffered audio, queued frames and queued units."""
        self._assembler.clear()
        dropped = {id(u) for u in self._queue.take()}
        self._turn_units = [u for u in self._turn_units if id(u) not in dropped]
        if self.vad is not None:
            self.vad.turn_sealed()

    def trim_idle(self) -> None:
        """Keep only the open turn's latest audio unit and latest frame-bearing unit."""
        units = self._turn_units
        if len(units) <= 1:
            return
        last_audio = next((u for u in reversed(units) if u.pcm), None)
        last_frames = next((u for u in reversed(units) if u.frames is not None), None)
        keep = {id(u) for u in (last_audio, last_frames) if u is not None}
        if len(keep) == len(units):
            return
        self._turn_units = [u for u in units if id(u) in keep]
        self._queue.keep(keep)
