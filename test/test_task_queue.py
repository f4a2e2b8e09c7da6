"""One task at a time: later requests wait their turn in order, up to the configured number."""

import threading

from planner.core.task_queue import TaskQueue


def test_with_no_room_to_wait_a_request_is_rejected_while_one_runs():
    queue = TaskQueue(capacity=0)
    first = queue.admit()
    assert queue.wait_turn(first, give_up=lambda: False)
    assert queue.admit() is None and not queue.has_room()
    queue.finished(first)
    assert queue.admit() is not None


def test_waiting_requests_run_in_the_order_they_came():
    queue = TaskQueue(capacity=2)
    first, second, third = queue.admit(), queue.admit(), queue.admit()
    assert queue.admit() is None  # two wait behind the one that is admitted first
    assert queue.wait_turn(first, give_up=lambda: False)
    assert (queue.position(second), queue.position(third)) == (1, 2)
    order = []

    def run(ticket):
        assert queue.wait_turn(ticket, give_up=lambda: False)
        order.append(ticket)
        queue.finished(ticket)

    threads = [threading.Thread(target=run, args=(t,)) for t in (third, second)]
    for thread in threads:
        thread.start()
    queue.finished(first)
    for thread in threads:
        thread.join(timeout=5)
    assert order == [second, third]


def test_a_request_canceled_while_waiting_leaves_the_queue_and_frees_its_place():
    queue = TaskQueue(capacity=1)
    running, waiting = queue.admit(), queue.admit()
    queue.wait_turn(running, give_up=lambda: False)
    assert not queue.has_room()
    assert not queue.wait_turn(waiting, give_up=lambda: True)
    assert queue.waiting() == 0 and queue.has_room()


def test_a_request_whose_turn_comes_as_it_is_canceled_does_not_start():
    """The emergency stop ends the running task and every waiting one: the task next in line, whose
    turn came as the one ahead ended, started and ran (seen in the node test under load)."""
    queue = TaskQueue(capacity=1)
    ticket = queue.admit()
    assert not queue.wait_turn(ticket, give_up=lambda: True)
    assert queue.waiting() == 0 and queue.wait_turn(queue.admit(), give_up=lambda: False)
