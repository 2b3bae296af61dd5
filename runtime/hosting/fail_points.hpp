#pragma once
// Named points where a test can have this process killed, to prove that a kill at any instant loses
// nothing. CRUCIBLE_FAIL_POINT="NAME:N" sends SIGKILL to the process on the Nth time it passes NAME (counted
// from the start of the process); unset, a fail point is one comparison. The points are driven by
// progress, not by time, so a test kills the same moment on a fast machine and a slow one.
//
// Points: conductor.generated (a group came back from the generator, not yet recorded), conductor.dispatch (a
// stage sent, its answer not in), conductor.answered (a stage answered, its progress not recorded),
// conductor.scored (a group complete, not yet stored), replay.record and replay.insert (inside the database
// transactions, before their commit), learner.step (a step trained and its metrics written, no checkpoint),
// checkpoint.written (a checkpoint file written, checkpoints/LATEST not yet pointing at it).
namespace crucible::runtime {

void fail_point(const char* name);

}  // namespace crucible::runtime
