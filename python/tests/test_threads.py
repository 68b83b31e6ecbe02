"""n_jobs, the GIL and Ctrl-C: the native core runs with the GIL released, so other Python
threads run during a fit; Ctrl-C (SIGINT) interrupts a long fit with KeyboardInterrupt and
stops its computation."""

import signal
import subprocess
import sys
import threading
import time

import numpy as np
from conftest import DATA

from milstream import ShapeletClassifier


def test_other_threads_run_python_while_the_native_fit_runs(gunpoint):
    X, y, _, _ = gunpoint
    clf = ShapeletClassifier(n_jobs=1)
    fitter = threading.Thread(target=clf.fit, args=(X, y))
    # Times the main thread saw the fitter inside the native call (`_native_call`): with
    # the GIL held there, it could not run at all until the call returned.
    seen_inside = 0
    fitter.start()
    while fitter.is_alive():
        frame = sys._current_frames().get(fitter.ident)
        if frame is not None and frame.f_code.co_name == "_native_call":
            seen_inside += 1
        time.sleep(0.001)
    fitter.join()
    assert hasattr(clf, "classes_"), "the fit finished"
    assert seen_inside >= 20, seen_inside


def test_n_jobs_gives_the_same_model(gunpoint):
    X, y, Xt, _ = gunpoint
    one = ShapeletClassifier(n_jobs=1).fit(X, y)
    two = ShapeletClassifier(n_jobs=2).fit(X, y)
    assert one.class_scores(Xt).tolist() == two.class_scores(Xt).tolist()


CHILD = f"""
import signal
import numpy as np
# Python leaves SIGINT ignored when it starts with it ignored, as a background job of a
# non-interactive shell (a CI runner's) does: restore the KeyboardInterrupt handler a
# terminal or a notebook has.
signal.signal(signal.SIGINT, signal.default_int_handler)
from milstream import ShapeletClassifier
d = np.loadtxt({str(DATA / "ACSF1_TRAIN.csv")!r}, delimiter=",")
# A grid search with a budget of a day: many minutes of fitting unless interrupted.
clf = ShapeletClassifier(search=True, search_budget=86400)
print("fitting", flush=True)
try:
    clf.fit(d[:, 1:], d[:, 0].astype(int))
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted; fitted:", hasattr(clf, "classes_"), flush=True)
    # The cancelled fit stops at its next boosting round or grid point: wait for a second
    # in which this process burns (almost) no CPU. An abandoned fit would keep its threads
    # busy for the search's whole day.
    import time
    for waited in range(60):
        cpu = time.process_time()
        time.sleep(1.0)
        if time.process_time() - cpu < 0.2:
            print("idle after", waited + 1, "s", flush=True)
            break
    else:
        print("still busy after 60 s", flush=True)
"""


def test_ctrl_c_interrupts_a_long_fit():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "fitting"
        time.sleep(2.0)  # into the native fit
        child.send_signal(signal.SIGINT)
        # A guard, not a measurement: the uninterrupted search runs for many minutes.
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert "interrupted; fitted: False" in out, (out, err)
    assert "finished" not in out
    assert "idle after" in out, (out, err)
