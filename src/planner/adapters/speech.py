"""Voice: speech to text offline with pocketsphinx (its bundled US English model), text to
speech with the espeak-ng program where it is installed."""

from __future__ import annotations

import io
import math
import shutil
import subprocess
import wave
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.core.errors import PlannerError
from planner.core.files import StrictModel


class SpeechSettings(StrictModel):
    voice: str = Field(default="en-us+f2", description="espeak-ng voice for spoken replies")
    words_per_minute: int = Field(default=160, ge=80, le=400)
    play_command: str = Field(default="", description="a player reading a WAV on stdin, e.g. `aplay -q`; "
                                                       "empty: replies go to /speech/audio_out only")
    max_clip_s: float = Field(default=30.0, gt=0, description="longer clips on /speech/audio are rejected")

RECOGNIZER_RATE = 16000  # what the bundled acoustic model was trained on


class SpeechError(PlannerError, RuntimeError):
    """Audio that cannot be used, or a speech program that is missing or failed."""


class AudioClip(BaseModel):
    """A clip as it arrives (from a message or a file), checked before it reaches the recognizer."""
    model_config = ConfigDict(arbitrary_types_allowed=True)
    sample_rate: int = Field(ge=8000, le=48000)
    channels: int = Field(ge=1, le=2)
    samples: np.ndarray
    max_seconds: float = Field(default=30.0, gt=0, exclude=True)

    @model_validator(mode="after")
    def _whole_frames(self):
        if len(self.samples) == 0:
            raise ValueError("the clip holds no samples")
        if len(self.samples) % self.channels:
            raise ValueError(f"{len(self.samples)} samples do not split into {self.channels} channels")
        if self.seconds > self.max_seconds:
            raise ValueError(f"the clip is {self.seconds:.1f} s long; at most {self.max_seconds:.0f} s are accepted")
        return self

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.channels / self.sample_rate

    def mono_16k(self) -> np.ndarray:
        """Channels averaged and resampled to the recognizer's rate (polyphase, anti-aliased)."""
        from scipy.signal import resample_poly

        mono = self.samples.astype(np.float32).reshape(-1, self.channels).mean(axis=1)
        if self.sample_rate != RECOGNIZER_RATE:
            common = math.gcd(self.sample_rate, RECOGNIZER_RATE)
            mono = resample_poly(mono, RECOGNIZER_RATE // common, self.sample_rate // common)
        return np.clip(mono, -32768, 32767).astype(np.int16)


def read_wav(data: bytes, max_seconds: float = 30.0) -> AudioClip:
    """A 16-bit PCM WAV file's contents as a clip."""
    try:
        with wave.open(io.BytesIO(data)) as wav:
            if wav.getsampwidth() != 2:
                raise SpeechError(f"the WAV has {8 * wav.getsampwidth()}-bit samples; 16-bit PCM is needed")
            samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
            return AudioClip(sample_rate=wav.getframerate(), channels=wav.getnchannels(), samples=samples,
                             max_seconds=max_seconds)
    except (wave.Error, EOFError) as error:
        raise SpeechError(f"not a readable WAV file: {error}") from None


class Transcriber:
    """pocketsphinx with its default US English acoustic and language models."""

    def __init__(self):
        from pocketsphinx import Decoder

        self.decoder = Decoder(samprate=RECOGNIZER_RATE, loglevel="FATAL")

    def transcribe(self, clip: AudioClip) -> str:
        audio = clip.mono_16k()
        # A moment of silence around the speech lets the recognizer settle its noise estimate.
        pad = np.zeros(RECOGNIZER_RATE // 4, dtype=np.int16)
        self.decoder.start_utt()
        self.decoder.process_raw(np.concatenate([pad, audio, pad]).tobytes(), full_utt=True)
        self.decoder.end_utt()
        hypothesis = self.decoder.hyp()
        return hypothesis.hypstr.strip() if hypothesis else ""


@dataclass
class Voice:
    name: str = "en-us+f2"
    words_per_minute: int = 160


def espeak_program() -> str | None:
    return shutil.which("espeak-ng")


def synthesize(text: str, voice: Voice, timeout_s: float = 30.0) -> AudioClip:
    """Speech for a sentence, as a clip (espeak-ng writes a WAV to stdout)."""
    program = espeak_program()
    if program is None:
        raise SpeechError("espeak-ng is not installed (apt install espeak-ng)")
    try:
        # The text goes on stdin, never on the command line, where "-f/etc/passwd" is an option.
        done = subprocess.run([program, "-v", voice.name, "-s", str(voice.words_per_minute), "--stdout", "--stdin"],
                              input=text.encode(), capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise SpeechError(f"espeak-ng took more than {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise SpeechError(f"espeak-ng failed: {done.stderr.decode(errors='replace').strip()}")
    return read_wav(done.stdout, max_seconds=600)


def play(clip: AudioClip, command: str, timeout_s: float = 60.0) -> None:
    """Send the clip as a WAV to a player's stdin, e.g. `aplay -q` or `paplay`."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(clip.channels)
        wav.setsampwidth(2)
        wav.setframerate(clip.sample_rate)
        wav.writeframes(clip.samples.astype("<i2").tobytes())
    try:
        done = subprocess.run(command.split(), input=buffer.getvalue(), capture_output=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SpeechError(f"the player {command!r} failed: {error}") from None
    if done.returncode != 0:
        raise SpeechError(f"the player {command!r} failed: {done.stderr.decode(errors='replace').strip()}")
