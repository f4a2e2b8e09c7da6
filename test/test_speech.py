"""Voice: a recorded request (made with espeak-ng) is transcribed offline and becomes a request;
a spoken answer to the planner's question picks the object; replies are spoken; bad audio is
rejected with the reason while the node keeps listening."""

import array

import numpy as np
import pytest
import yaml
from std_msgs.msg import String

from conftest import CONFIG, DATA, RosClient, wait_for, write_config
from planner.action import Say
from planner.adapters.speech import AudioClip, SpeechError, Transcriber, Voice, espeak_program, read_wav, synthesize
from planner.config import load_config
from planner.msg import AudioClip as AudioClipMsg
from planner.msg import PlanStep
from planner.ros.nodes.perception import PerceptionNode
from planner.ros.nodes.simulator import SimulatorNode
from planner.ros.nodes.speech import SpeechNode, clip_from_msg
from planner.ros.nodes.task_planner import TaskPlannerNode

SPEECH = DATA / "speech"


def clip_msg(wav_name: str) -> AudioClipMsg:
    clip = read_wav((SPEECH / wav_name).read_bytes())
    return AudioClipMsg(sample_rate=clip.sample_rate, channels=clip.channels,
                        samples=array.array("h", clip.samples.tobytes()))


def test_a_recorded_request_is_transcribed_offline():
    clip = read_wav((SPEECH / "pick_up_the_bottle.wav").read_bytes())
    assert clip.sample_rate == 22050  # resampled to the model's 16 kHz on the way in
    assert Transcriber().transcribe(clip) == "go to the kitchen and pick up the bottle"


@pytest.mark.parametrize("rate, channels, samples, problem", [
    (4000, 1, 100, "sample_rate"),
    (16000, 3, 300, "channels"),
    (16000, 2, 301, "do not split into 2 channels"),
    (16000, 1, 0, "holds no samples"),
    (16000, 1, 16000 * 31, "at most 30 s"),
])
def test_unusable_audio_is_rejected_with_the_reason(rate, channels, samples, problem):
    with pytest.raises(ValueError, match=problem):
        AudioClip(sample_rate=rate, channels=channels, samples=np.zeros(samples, np.int16))


def test_a_file_that_is_not_a_wav_is_named_as_such():
    with pytest.raises(SpeechError, match="not a readable WAV"):
        read_wav(b"RIFF....not audio")


@pytest.mark.skipif(espeak_program() is None, reason="espeak-ng is not installed")
def test_text_to_speak_is_never_read_as_an_option_or_a_file(tmp_path):
    """Text starting with '-' is spoken as text: '--version' was printed instead of spoken, and
    '-f FILE' read the file aloud."""
    secret = tmp_path / "secret.txt"
    secret.write_text("one two three four five " * 40)
    spoken_version = synthesize("--version", Voice())
    assert spoken_version.seconds > 0.3
    file_option = synthesize(f"-f{secret}", Voice(words_per_minute=400))
    whole_file = synthesize(secret.read_text(), Voice(words_per_minute=400))
    assert file_option.seconds < whole_file.seconds / 2


@pytest.fixture
def speech(ros, tmp_path):
    """The speech node, with the planner's question topic and the command it forwards watched. One
    per test: a second speech node left running would hear, and answer, what the next test says."""
    config = load_config(write_config(tmp_path))
    client = RosClient("speech_client")
    topics = {name: client.collect(String, topic) for name, topic in
              (("commands", "/planner/command"), ("transcripts", "/speech/transcript"), ("status", "/planner/status"))}
    topics["spoken"] = client.collect(AudioClipMsg, "/speech/audio_out")
    client.add(SpeechNode(config))
    audio = client.node.create_publisher(AudioClipMsg, "/speech/audio", 10)
    wait_for(lambda: client.node.count_subscribers("/speech/audio") > 0)
    yield client, topics, audio, config
    client.close()


def test_voice_requests_go_where_typed_ones_go_and_bad_clips_are_reported(speech):
    client, topics, audio, _ = speech
    audio.publish(AudioClipMsg(sample_rate=16000, channels=3, samples=array.array("h", [0] * 30)))
    wait_for(lambda: any("rejected" in s.data and "channels" in s.data for s in topics["status"]))
    audio.publish(clip_msg("pick_up_the_bottle.wav"))  # the node still listens
    wait_for(lambda: topics["commands"], timeout=30)
    assert topics["commands"][-1].data == "go to the kitchen and pick up the bottle"
    assert topics["transcripts"][-1].data == topics["commands"][-1].data


@pytest.mark.skipif(espeak_program() is None, reason="espeak-ng is not installed (scripts/setup.sh installs it)")
def test_spoken_replies_are_speech_the_recognizer_understands(speech):
    client, topics, _, config = speech
    # The recognizer's general English model needs a sentence of some length; this one it gets right.
    result = client.action(Say, "/speech/say", Say.Goal(text="Go to the kitchen and pick up the bottle."), timeout=30)
    assert result.success, result.message
    wait_for(lambda: topics["spoken"])
    clip = clip_from_msg(topics["spoken"][-1], config.speech.max_clip_s)
    assert Transcriber().transcribe(clip) == "go to the kitchen and pick up the bottle"
    empty = client.action(Say, "/speech/say", Say.Goal(text="  "), timeout=30)
    assert not empty.success and "nothing to say" in empty.message


def test_a_spoken_answer_tells_the_planner_which_object_is_meant(ros, tmp_path):
    scenario = tmp_path / "apartment.yaml"
    scenario.write_text(yaml.safe_dump({"world": str(CONFIG / "worlds" / "apartment.yaml"), "request": "", "events": []}))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([{"goals": [{"kind": "holding", "object": "glass", "target": "", "room": ""}]},
                                      {"thought": "enough for this test", "action": "GIVE_UP()"}]))
    config = load_config(write_config(tmp_path, scenario=str(scenario), llm={"provider": "scripted", "script": str(script)}))
    client = RosClient("answer_client")
    try:
        questions = client.collect(String, "/planner/question")
        trace = client.collect(PlanStep, "/planner/trace")
        for node in (SimulatorNode(config), PerceptionNode(config), SpeechNode(config), TaskPlannerNode(config)):
            client.add(node)
        commands = client.node.create_publisher(String, "/planner/command", 10)
        audio = client.node.create_publisher(AudioClipMsg, "/speech/audio", 10)
        wait_for(lambda: client.node.count_subscribers("/planner/command") > 0
                 and client.node.count_subscribers("/speech/audio") > 0)
        commands.publish(String(data="Pick up the glass"))
        wait_for(lambda: questions, timeout=30)
        assert questions[0].data.startswith("Which glass do you mean?")
        audio.publish(clip_msg("the_one_in_the_kitchen.wav"))
        wait_for(lambda: any(s.kind == "goal" for s in trace), timeout=30)
        assert next(s.text for s in trace if s.kind == "goal") == "the robot holds glass_1"
        assert any(s.kind == "answer" and "kitchen" in s.text for s in trace)
        wait_for(lambda: any(s.kind == "result" for s in trace), timeout=30)  # the task ends before the nodes do
    finally:
        client.close()
