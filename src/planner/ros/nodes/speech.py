"""Speech node: voice requests and spoken replies.

Audio clips on /speech/audio are transcribed offline (pocketsphinx) and go where a typed request
goes, /planner/command — or to /planner/answer while the planner waits for the answer to a
question it asked on /planner/question. /speech/say speaks a sentence with espeak-ng; the sound
is published on /speech/audio_out and, when a player command is configured, played."""

from __future__ import annotations

import array
import threading
import time

import numpy as np
from pydantic import ValidationError
from rclpy.action import ActionServer
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from std_msgs.msg import String

from planner.action import Say
from planner.adapters.speech import AudioClip, SpeechError, Transcriber, Voice, play, synthesize
from planner.core.files import describe_validation_error
from planner.msg import AudioClip as AudioClipMsg
from planner.ros.convert import stamp_now
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE


def clip_from_msg(msg: AudioClipMsg, max_seconds: float) -> AudioClip:
    return AudioClip(sample_rate=msg.sample_rate, channels=msg.channels,
                     samples=np.frombuffer(msg.samples, dtype=np.int16), max_seconds=max_seconds)


def clip_to_msg(clip: AudioClip, node) -> AudioClipMsg:
    return AudioClipMsg(stamp=stamp_now(node), sample_rate=clip.sample_rate, channels=clip.channels,
                        samples=array.array("h", clip.samples.astype(np.int16).tobytes()))


class SpeechNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("speech", config)
        self.settings = self.config.speech
        self.voice = Voice(self.settings.voice, self.settings.words_per_minute)
        try:
            self.transcriber: Transcriber | None = Transcriber()
        except ImportError:
            self.transcriber = None
            self.report("error", "speech to text is unavailable: pocketsphinx is not installed (pip install pocketsphinx)")
        self.recognizing = threading.Lock()  # one decoder, one clip at a time
        self.question_until = 0.0             # while the planner waits for an answer, speech answers it
        self.command_pub = self.create_publisher(String, "planner/command", RELIABLE)
        self.answer_pub = self.create_publisher(String, "planner/answer", RELIABLE)
        self.transcript_pub = self.create_publisher(String, "speech/transcript", RELIABLE)
        self.audio_out_pub = self.create_publisher(AudioClipMsg, "speech/audio_out", RELIABLE)
        self.create_subscription(AudioClipMsg, "speech/audio", self._on_audio, RELIABLE,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.create_subscription(String, "planner/question", self._on_question, RELIABLE)
        ActionServer(self, Say, "speech/say", self._say, callback_group=ReentrantCallbackGroup())

    def _on_question(self, msg: String) -> None:
        self.question_until = time.monotonic() + self.config.planner.question_timeout_s

    def _on_audio(self, msg: AudioClipMsg) -> None:
        if self.transcriber is None:
            self.report("error", "audio on /speech/audio ignored: speech to text is unavailable")
            return
        try:
            clip = clip_from_msg(msg, self.settings.max_clip_s)
        except ValidationError as error:
            self.report("error", describe_validation_error("audio on /speech/audio rejected", error))
            return
        with self.recognizing:
            text = self.transcriber.transcribe(clip)
        self.transcript_pub.publish(String(data=text))
        if not text:
            self.report("warn", f"heard {clip.seconds:.1f} s of audio but could not make out any words")
            return
        answering = time.monotonic() < self.question_until
        self.report("info", f"heard {text!r}" + (" (an answer)" if answering else ""))
        if answering:
            self.question_until = 0.0
            self.answer_pub.publish(String(data=text))
        else:
            self.command_pub.publish(String(data=text))

    def _say(self, goal_handle):
        text = goal_handle.request.text.strip()
        try:
            if not text:
                raise SpeechError("nothing to say")
            clip = synthesize(text, self.voice)
            self.audio_out_pub.publish(clip_to_msg(clip, self))
            if self.settings.play_command:
                play(clip, self.settings.play_command)
        except SpeechError as error:
            self.report("warn", f"could not say {text!r}: {error}")
            goal_handle.abort()
            return Say.Result(success=False, message=str(error))
        goal_handle.succeed()
        return Say.Result(success=True, message=f"said {text!r} ({clip.seconds:.1f} s)")


def main() -> int:
    return main_for(SpeechNode)
