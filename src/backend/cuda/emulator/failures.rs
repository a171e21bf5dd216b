//! Driver calls that fail on demand, for tests of what the library does when a call to a GPU's
//! driver fails part way through an operation: the operation must return an error naming the
//! call, write no output, keep no memory, and leave the device as usable, and its state (the
//! upload ring, the kept-zero counters and slots, the kernel modules) as right, as before.
//!
//! A thread arms the plan with [`arm`]: from then on each of its emulated driver calls that
//! queues or waits for work, or makes or uses an event, page-locked memory or a kernel, is
//! counted, and the one at the chosen index fails, once, as a GPU's driver fails a call with an
//! error that leaves the context usable. [`disarm`] ends the plan and says how many calls it saw,
//! and which failed.
//! Allocating and freeing device memory is not counted (a test refuses allocations through its
//! allocator, which the emulated devices' memory comes from), nor are pointer and memory queries.
//! The plan is the thread's own, so tests running at once on other threads are not touched.

use crate::error::{err, Result};
use std::cell::RefCell;

struct Plan {
    /// The calls counted so far.
    seen: usize,
    /// The index of the call that fails.
    fail_at: Option<usize>,
    /// The name of the call that failed, once it has.
    failed: Option<String>,
}

thread_local! {
    static PLAN: RefCell<Option<Plan>> = const { RefCell::new(None) };
}

/// What a plan saw: the driver calls counted, and the name of the one that failed (`None` if
/// fewer calls were made than the index chosen, or none was chosen).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counted {
    pub calls: usize,
    pub failed: Option<String>,
}

/// Counts this thread's driver calls from now on, failing the one at index `fail_at` (counting
/// from 0), or none.
pub fn arm(fail_at: Option<usize>) {
    PLAN.with_borrow_mut(|p| *p = Some(Plan { seen: 0, fail_at, failed: None }));
}

/// Ends the plan [`arm`] made (all zero if none was armed).
pub fn disarm() -> Counted {
    PLAN.with_borrow_mut(Option::take).map_or_else(Counted::default, |p| Counted { calls: p.seen, failed: p.failed })
}

/// Counts a driver call `what` (named as `driver.rs` names it in its errors), and fails it where
/// the plan says so, as `driver.rs` reports a driver's failure.
pub(super) fn call(what: &str) -> Result<()> {
    PLAN.with_borrow_mut(|p| {
        let Some(plan) = p.as_mut() else { return Ok(()) };
        plan.seen += 1;
        if plan.fail_at != Some(plan.seen - 1) {
            return Ok(());
        }
        plan.failed = Some(what.to_string());
        Err(err!(Internal, "{what}: the CUDA driver failed with CUDA_ERROR_UNKNOWN (injected by the emulator)"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_call_fails_once_and_calls_are_counted() {
        let counted = |calls, failed: Option<&str>| Counted { calls, failed: failed.map(str::to_string) };
        assert_eq!(disarm(), counted(0, None), "no plan");
        assert!(call("x").is_ok(), "a call with no plan");
        arm(Some(2));
        let results: Vec<bool> = (0..5).map(|i| call(&format!("call {i}")).is_ok()).collect();
        assert_eq!(results, [true, true, false, true, true]);
        assert_eq!(disarm(), counted(5, Some("call 2")));
        assert_eq!(disarm(), counted(0, None), "the plan ended");
        arm(Some(3));
        assert!(call("x").is_ok());
        assert_eq!(disarm(), counted(1, None), "fewer calls than the index");
        arm(Some(0));
        let e = call("copy to device").unwrap_err().to_string();
        assert!(e.contains("copy to device") && e.contains("injected"), "{e}");
        // Another thread's calls are not counted, nor failed.
        std::thread::spawn(move || assert!(call("y").is_ok() && disarm() == counted(0, None))).join().unwrap();
        assert_eq!(disarm(), counted(1, Some("copy to device")));
    }
}
