//! LoD ("level of detail"): multi-level sequence offsets in relative-offset form.
//!
//! The last level indexes rows of a tensor; every higher level indexes entries (sequences) of the
//! level below, so empty sequences are representable at every level.

use crate::error::{ensure, err, Result};
use crate::memory::{lists, Allocation};
use crate::place::Place;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// A LoD in relative-offset form that passes [`check_lod`] (without a height). Whether it matches a
/// tensor's row count is checked where the two meet, in `LoDTensor`, against the last offset only:
/// the rest was checked when the LoD was made. Clones share the offsets (a LoD is never changed in
/// place), so an op whose output keeps its input's LoD costs nothing per sequence for it; they
/// share the copies of levels that ops made at other places too (a level's device copy, made at
/// its first use on a device, serves every later op there; it is freed with the last clone).
#[derive(Clone, Default)]
pub struct Lod {
    /// `None` for the empty LoD, so that a dense tensor allocates nothing for it.
    shared: Option<Arc<Shared>>,
}

#[derive(Default)]
struct Shared {
    levels: Vec<Vec<usize>>,
    copies: Mutex<Vec<LevelCopy>>,
    /// Each level's longest sequence, measured at the first request (ops that size their output or
    /// choose a kernel by it would otherwise pass over the offsets at every call).
    longest: OnceLock<Vec<usize>>,
}

/// A level's offsets as an op placed them elsewhere (the same bytes: offsets as 8-byte integers).
struct LevelCopy {
    place: Place,
    of: CopyOf,
    offsets: Arc<Allocation>,
}

/// Which offsets a copy holds: a level as it is, or a level above the last in absolute form (its
/// offsets in rows; the last level is in rows already, so its absolute form is `Level`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CopyOf {
    Level(usize),
    Rows(usize),
}

impl Shared {
    /// The copy of `of` at `place`, made by `make` at the first request.
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    fn copy_at(
        &self,
        of: CopyOf,
        place: Place,
        make: impl FnOnce() -> Result<Arc<Allocation>>,
    ) -> Result<Arc<Allocation>> {
        let mut copies = self.copies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = copies.iter().find(|c| c.place == place && c.of == of) {
            return Ok(c.offsets.clone());
        }
        let offsets = make()?;
        copies.push(LevelCopy { place, of, offsets: offsets.clone() });
        Ok(offsets)
    }
}

impl PartialEq for Lod {
    fn eq(&self, other: &Lod) -> bool {
        match (&self.shared, &other.shared) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.levels == b.levels,
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Eq for Lod {}

impl std::fmt::Debug for Lod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lod").field("levels", &self.levels()).finish()
    }
}

/// One level of a LoD: its offsets, and the copies of them that the LoD keeps at other places.
#[derive(Clone, Copy)]
pub struct LodLevel<'a> {
    shared: &'a Shared,
    level: usize,
}

impl<'a> LodLevel<'a> {
    /// The level's offsets.
    pub fn offsets(&self) -> &'a [usize] {
        &self.shared.levels[self.level]
    }

    /// The length of the level's longest sequence (0 for a level of no sequences).
    pub fn longest(&self) -> usize {
        self.shared.longest.get_or_init(|| self.shared.levels.iter().map(|l| longest(l)).collect())[self.level]
    }

    /// Keeps `offsets` (the level's offsets as 8-byte integers, already at `place`) as the level's
    /// copy there, unless it has one: what an import found on a device serves the ops there.
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn keep_copy(&self, place: Place, offsets: Arc<Allocation>) {
        let _ = self.shared.copy_at(CopyOf::Level(self.level), place, || Ok(offsets));
    }

    /// The level's offsets at `place`, made there by `make` at the first request and shared by
    /// every clone of the LoD from then on (the offsets never change, so neither does the copy).
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn copy_at(
        &self,
        place: Place,
        make: impl FnOnce(&[usize]) -> Result<Arc<Allocation>>,
    ) -> Result<Arc<Allocation>> {
        self.shared.copy_at(CopyOf::Level(self.level), place, || make(self.offsets()))
    }
}

/// The largest difference of adjacent offsets (0 for fewer than two): a level's longest sequence.
/// Four running maxima, so that each step need not wait for the one before (a single one ran at
/// less than half the speed in an x86-64 baseline build).
fn longest(offsets: &[usize]) -> usize {
    let Some(n) = offsets.len().checked_sub(1) else { return 0 };
    let (starts, ends) = (offsets[..n].chunks_exact(4), offsets[1..].chunks_exact(4));
    let tail = starts.remainder().iter().zip(ends.remainder()).map(|(s, e)| e - s).max().unwrap_or(0);
    let mut most = [0usize; 4];
    for (s, e) in starts.zip(ends) {
        for k in 0..4 {
            most[k] = most[k].max(e[k] - s[k]);
        }
    }
    most.into_iter().fold(tail, usize::max)
}

/// Validates a relative-offset LoD with the rules of Paddle's `CheckLoD`, in its order:
/// every level starts at 0 and never decreases; the top level has at least 2 offsets (at least
/// one sequence); if `height` is given, the last level ends at `height`; every level but the last
/// ends at the number of sequences of the level below. An empty LoD (no levels) is valid. The
/// error names the level, index and rule.
///
/// Our rule, relaxing Paddle's "every level has at least 2 offsets": a level below the top may be
/// `[0]` (zero sequences). The last rule allows that only under a level that ends at 0, i.e. when
/// every sequence above is empty. Slicing or splitting a batch whose first top-level sequence is
/// empty produces exactly such LoDs (Paddle produces them too, without validating), so the rule
/// keeps every slice and split piece of a valid LoDTensor valid. `[[0]]` stays invalid.
pub fn check_lod(levels: &[Vec<usize>], height: Option<usize>) -> Result<()> {
    for (k, level) in levels.iter().enumerate() {
        check_level_shape(k, level, if k == 0 { 2 } else { 1 })?;
    }
    if let Some(height) = height {
        check_height(levels, height)?;
    }
    for k in 0..levels.len().saturating_sub(1) {
        let end = *levels[k].last().expect("checked above");
        let below = levels[k + 1].len() - 1;
        ensure!(
            end == below,
            InvalidLod,
            "LoD level {k} ends at offset {end}, but level {} has {below} sequences; \
             a level must end at the number of sequences of the level below",
            k + 1
        );
    }
    Ok(())
}

/// The rule of `check_lod` that ties a LoD to a tensor: the last level (non-empty levels, if any)
/// ends at `height`.
fn check_height(levels: &[Vec<usize>], height: usize) -> Result<()> {
    let Some(last) = levels.last() else { return Ok(()) };
    let end = *last.last().expect("checked by the caller");
    ensure!(
        end == height,
        InvalidLod,
        "LoD level {} (the last) ends at offset {end}, but the tensor has {height} rows; \
         the last level must end at the row count",
        levels.len() - 1
    );
    Ok(())
}

/// Validates an absolute-offset LoD (every level indexes rows): each level has at least 2 offsets,
/// starts at 0, never decreases, and ends at the same height (`height`, or the first level's last
/// offset when `None`). Non-decreasing rather than strictly ascending, because the absolute form of
/// a LoD with empty sequences repeats offsets.
pub fn check_abs_lod(levels: &[Vec<usize>], height: Option<usize>) -> Result<()> {
    for (k, level) in levels.iter().enumerate() {
        check_level_shape(k, level, 2)?;
    }
    let Some(first) = levels.first() else { return Ok(()) };
    let height = height.unwrap_or(*first.last().expect("checked above"));
    for (k, level) in levels.iter().enumerate() {
        let end = *level.last().expect("checked above");
        ensure!(
            end == height,
            InvalidLod,
            "absolute LoD level {k} ends at row {end}, expected {height}; every level must end at the tensor height"
        );
    }
    Ok(())
}

/// Rule 2 of `CheckLoD` for one level: at least `min_len` offsets, starting at 0, non-decreasing.
fn check_level_shape(k: usize, level: &[usize], min_len: usize) -> Result<()> {
    ensure!(
        level.len() >= min_len,
        InvalidLod,
        "LoD level {k} has {} offset(s); {}",
        level.len(),
        if min_len == 2 {
            "the top level needs at least 2 (a start and an end)"
        } else {
            "every level needs at least 1"
        }
    );
    ensure!(level[0] == 0, InvalidLod, "LoD level {k} starts at offset {}; every level must start at 0", level[0]);
    if let Some(i) = (1..level.len()).find(|&i| level[i] < level[i - 1]) {
        return Err(err!(
            InvalidLod,
            "LoD level {k}: offset[{i}] = {} is less than offset[{}] = {}; offsets must be non-decreasing",
            level[i],
            i - 1,
            level[i - 1]
        ));
    }
    Ok(())
}

/// Lengths to offsets, level by level (`[2,1]` -> `[0,2,3]`; `[]` -> `[0]`). Fails only if a
/// running sum overflows (`InvalidLod`) or there is no memory for the offsets (`OutOfMemory`).
/// The result is not validated.
pub fn lengths_to_offsets(lengths: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    lengths
        .iter()
        .enumerate()
        .map(|(k, level)| {
            let mut offsets = lists::with_capacity(level.len() + 1, "LoD offsets")?;
            offsets.push(0usize);
            let mut sum = 0usize;
            for (i, &n) in level.iter().enumerate() {
                sum = sum
                    .checked_add(n)
                    .ok_or_else(|| err!(InvalidLod, "LoD level {k}: the lengths overflow at index {i}"))?;
                offsets.push(sum);
            }
            Ok(offsets)
        })
        .collect()
}

/// Offsets to lengths, level by level (adjacent differences). A level with no offsets at all, or
/// a decreasing pair, is an error rather than a wrap-around.
pub fn offsets_to_lengths(offsets: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    offsets
        .iter()
        .enumerate()
        .map(|(k, level)| {
            ensure!(!level.is_empty(), InvalidLod, "LoD level {k} has no offsets; every level needs at least 2");
            level
                .windows(2)
                .enumerate()
                .map(|(i, w)| {
                    w[1].checked_sub(w[0]).ok_or_else(|| {
                        err!(
                            InvalidLod,
                            "LoD level {k}: offset[{}] = {} is less than offset[{i}] = {}; offsets must be non-decreasing",
                            i + 1,
                            w[1],
                            w[0]
                        )
                    })
                })
                .collect()
        })
        .collect()
}

/// Appends length-described sequences to an offset LoD, level by level (Paddle's `AppendLoD`).
/// `lod` must be empty (it then starts as `[0]` per level) or have as many levels as `lengths`.
/// The result is not validated; on error `lod` is unchanged.
pub fn append_lod(lod: &mut Vec<Vec<usize>>, lengths: &[Vec<usize>]) -> Result<()> {
    ensure!(
        lod.is_empty() || lod.len() == lengths.len(),
        InvalidArgument,
        "lengths: {} level(s) cannot be appended to a LoD of {} level(s); the level counts must match",
        lengths.len(),
        lod.len()
    );
    let mut out = if lod.is_empty() { vec![vec![0usize]; lengths.len()] } else { lod.clone() };
    for (k, (level, add)) in out.iter_mut().zip(lengths).enumerate() {
        ensure!(!level.is_empty(), InvalidLod, "LoD level {k} has no offsets to append to");
        for &n in add {
            let last = *level.last().expect("non-empty");
            level.push(last.checked_add(n).ok_or_else(|| err!(InvalidLod, "LoD level {k}: appending {n} overflows"))?);
        }
    }
    *lod = out;
    Ok(())
}

impl Lod {
    /// The empty LoD: no levels, a plain dense tensor.
    pub fn empty() -> Lod {
        Lod::default()
    }

    /// A LoD from relative offsets, validated with [`check_lod`].
    pub fn from_offsets(levels: Vec<Vec<usize>>) -> Result<Lod> {
        check_lod(&levels, None)?;
        Ok(Lod::valid(levels))
    }

    /// A LoD from lengths (`recursive_sequence_lengths`), converted to offsets and validated.
    pub fn from_lengths(lengths: &[Vec<usize>]) -> Result<Lod> {
        Lod::from_offsets(lengths_to_offsets(lengths)?)
    }

    /// A LoD from levels that pass `check_lod` because of how an op made them (sums or running
    /// sums of valid levels), not checked again: a check is a pass over every offset, and an output
    /// may hold millions. Debug builds check.
    pub(crate) fn from_built_offsets(levels: Vec<Vec<usize>>) -> Lod {
        debug_assert!(check_lod(&levels, None).is_ok(), "built offsets: {:?}", check_lod(&levels, None));
        Lod::valid(levels)
    }

    /// A LoD from levels that pass `check_lod` (checked here, or copied from a LoD).
    fn valid(levels: Vec<Vec<usize>>) -> Lod {
        let shared = (!levels.is_empty()).then(|| Arc::new(Shared { levels, ..Shared::default() }));
        Lod { shared }
    }

    /// The same offsets in a LoD of their own, without the copies this one keeps elsewhere.
    ///
    /// Errors: `OutOfMemory` (no memory for the copy of the offsets).
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn detached(&self) -> Result<Lod> {
        Ok(Lod::valid(lists::copy_of_levels(self.levels(), "lod: a copy of its offsets")?))
    }

    pub fn levels(&self) -> &[Vec<usize>] {
        self.shared.as_ref().map_or(&[], |s| &s.levels)
    }

    /// The offsets, level by level (a copy where another clone still shares them).
    pub fn into_levels(self) -> Vec<Vec<usize>> {
        let Some(shared) = self.shared else { return Vec::new() };
        Arc::try_unwrap(shared).map_or_else(|shared| shared.levels.clone(), |own| own.levels)
    }

    /// Whether this LoD fits a tensor of `rows` rows: its last level ends at `rows` (the one rule
    /// of `check_lod` that involves the tensor; a `Lod` passed the others when it was made).
    pub fn check_rows(&self, rows: usize) -> Result<()> {
        check_height(self.levels(), rows)
    }

    pub fn num_levels(&self) -> usize {
        self.levels().len()
    }

    pub fn is_empty(&self) -> bool {
        self.levels().is_empty()
    }

    /// The offsets of `level`.
    pub fn level(&self, level: usize) -> Result<&[usize]> {
        self.levels().get(level).map(Vec::as_slice).ok_or_else(|| {
            err!(OutOfRange, "level: {level} is out of range; the LoD has {} level(s)", self.levels().len())
        })
    }

    /// Level `level`, with its copies at other places (see [`LodLevel`]).
    pub fn lod_level(&self, level: usize) -> Result<LodLevel<'_>> {
        self.level(level)?;
        Ok(LodLevel { shared: self.shared.as_ref().expect("a LoD with that level"), level })
    }

    /// Number of sequences at `level` (Paddle's `NumElements`).
    pub fn num_sequences(&self, level: usize) -> Result<usize> {
        Ok(self.level(level)?.len() - 1)
    }

    /// Offsets `(start, end)` of sequence `index` at `level` (Paddle's `lod_element`), in units of
    /// the level below.
    pub fn element(&self, level: usize, index: usize) -> Result<(usize, usize)> {
        let offsets = self.level(level)?;
        ensure!(
            index < offsets.len() - 1,
            OutOfRange,
            "index: sequence {index} is out of range; level {level} has {} sequences",
            offsets.len() - 1
        );
        Ok((offsets[index], offsets[index + 1]))
    }

    /// The lengths form (`recursive_sequence_lengths`).
    pub fn lengths(&self) -> Vec<Vec<usize>> {
        self.levels().iter().map(|l| l.windows(2).map(|w| w[1] - w[0]).collect()).collect()
    }

    /// Lengths of one level.
    pub fn level_lengths(&self, level: usize) -> Result<Vec<usize>> {
        Ok(self.level(level)?.windows(2).map(|w| w[1] - w[0]).collect())
    }

    /// The row count this LoD describes (the last offset of the last level), if it has levels.
    pub fn rows(&self) -> Option<usize> {
        self.levels().last().map(|l| *l.last().expect("valid LoD levels are non-empty"))
    }

    /// Every level as absolute row offsets (Paddle's `ToAbsOffset`).
    pub fn abs_offsets(&self) -> Vec<Vec<usize>> {
        let mut abs = self.levels().to_vec();
        for k in (0..abs.len().saturating_sub(1)).rev() {
            let (upper, lower) = abs.split_at_mut(k + 1);
            for offset in upper[k].iter_mut() {
                *offset = lower[0][*offset];
            }
        }
        abs
    }

    /// Level `level` in absolute form: sequence `i` of that level covers rows `[a[i], a[i+1])`
    /// (the level of [`Lod::abs_offsets`], without the others).
    pub fn abs_level(&self, level: usize) -> Result<Vec<usize>> {
        let mut abs = lists::copy_of(self.level(level)?, "absolute LoD offsets")?;
        for lower in &self.levels()[level + 1..] {
            abs.iter_mut().for_each(|o| *o = lower[*o]);
        }
        Ok(abs)
    }

    /// [`Lod::abs_level`] `level` at `place`, kept like a level's copy (see [`LodLevel::copy_at`]):
    /// made by `make` at the first request, from then on shared by every clone. For the last
    /// level this is that level's copy.
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn abs_copy_at(
        &self,
        level: usize,
        place: Place,
        make: impl FnOnce() -> Result<Arc<Allocation>>,
    ) -> Result<Arc<Allocation>> {
        let shared = self.lod_level(level)?.shared;
        let of = if level + 1 == shared.levels.len() { CopyOf::Level(level) } else { CopyOf::Rows(level) };
        shared.copy_at(of, place, make)
    }

    /// Absolute rows of sequence `index` at `level`, found by walking down the levels.
    pub fn sequence_rows(&self, level: usize, index: usize) -> Result<Range<usize>> {
        let (mut start, mut end) = self.element(level, index)?;
        for lower in &self.levels()[level + 1..] {
            (start, end) = (lower[start], lower[end]);
        }
        Ok(start..end)
    }

    /// The LoD of sequences `[begin, end)` of `level`, re-based to 0, with levels `level..` (Paddle's
    /// `SliceInLevel`). The range must be non-empty.
    pub fn slice_in_level(&self, level: usize, begin: usize, end: usize) -> Result<Lod> {
        let top = self.level(level)?;
        ensure!(begin < end, OutOfRange, "begin: {begin} must be less than end {end} (an empty slice has no LoD)");
        ensure!(
            end < top.len(),
            OutOfRange,
            "end: {end} is out of range; level {level} has {} sequences",
            top.len() - 1
        );
        let (mut first, mut last) = (begin, end);
        let mut levels = Vec::with_capacity(self.levels().len() - level);
        for offsets in &self.levels()[level..] {
            let part = &offsets[first..=last];
            levels.push(lists::collect(part.iter().map(|&o| o - part[0]), "LoD slice")?);
            (first, last) = (part[0], part[part.len() - 1]);
        }
        Ok(Lod::valid(levels))
    }

    /// Lengths of levels `start_level..` for sequences `[start, end)` of `start_level`, and their
    /// absolute row range (Paddle's `GetSubLoDAndAbsoluteOffset`). An empty range is allowed; with
    /// `start_level == num_levels` the range is taken as rows and returned unchanged.
    pub fn sub_lod_and_abs_offset(
        &self,
        start: usize,
        end: usize,
        start_level: usize,
    ) -> Result<(Vec<Vec<usize>>, Range<usize>)> {
        ensure!(
            start_level <= self.levels().len(),
            OutOfRange,
            "start_level: {start_level} is out of range; the LoD has {} level(s)",
            self.levels().len()
        );
        let (mut start, mut end) = (start, end);
        let mut lengths = Vec::with_capacity(self.levels().len() - start_level);
        for (level, offsets) in self.levels().iter().enumerate().skip(start_level) {
            ensure!(start <= end, OutOfRange, "start: {start} is greater than end {end} at level {level}");
            ensure!(
                end < offsets.len(),
                OutOfRange,
                "end: {end} is out of range; level {level} has {} sequences",
                offsets.len() - 1
            );
            lengths.push(lists::collect(offsets[start..=end].windows(2).map(|w| w[1] - w[0]), "LoD lengths")?);
            (start, end) = (offsets[start], offsets[end]);
        }
        Ok((lengths, start..end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_rows_walks_down() {
        let lod = Lod::from_offsets(vec![vec![0, 2, 3], vec![0, 2, 4, 7], vec![0, 2, 5, 7, 10, 12, 15, 20]]).unwrap();
        assert_eq!(lod.sequence_rows(0, 1).unwrap(), 10..20);
        assert_eq!(lod.sequence_rows(1, 0).unwrap(), 0..5);
        assert_eq!(lod.sequence_rows(2, 6).unwrap(), 15..20);
        assert!(lod.sequence_rows(0, 2).is_err());
        assert!(lod.sequence_rows(3, 0).is_err());
        assert!(matches!(lod.sequence_rows(0, usize::MAX), Err(crate::Error::OutOfRange(_))));
        assert!(matches!(lod.element(2, usize::MAX), Err(crate::Error::OutOfRange(_))));
    }

    /// Clones share the offsets (an op that keeps its input's LoD must not copy millions of
    /// offsets); taking the levels out copies them only while another clone shares them.
    #[test]
    fn clones_share_offsets() {
        let lod = Lod::from_lengths(&[vec![2, 0, 3], vec![1; 5]]).unwrap();
        let copy = lod.clone();
        assert!(std::ptr::eq(lod.levels(), copy.levels()), "a clone copied the offsets");
        let first = lod.level(1).unwrap().as_ptr();
        let taken = lod.into_levels();
        assert_eq!(taken, copy.levels(), "the levels taken out of a shared LoD differ");
        assert_ne!(taken[1].as_ptr(), first, "the levels were taken from under a clone");
        let last = copy.level(1).unwrap().as_ptr();
        assert_eq!(copy.into_levels()[1].as_ptr(), last, "the last owner's levels were copied");
        // The empty LoD, however made.
        let empty = Lod::from_offsets(vec![]).unwrap();
        assert!(empty == Lod::empty() && empty.is_empty() && empty.levels().is_empty());
        assert_ne!(empty, Lod::from_lengths(&[vec![0]]).unwrap());
        assert!(empty.into_levels().is_empty());
    }

    /// A level's longest sequence is the largest difference of its offsets, also with fewer than
    /// four sequences, empty ones, and the longest in the unrolled loop's tail.
    #[test]
    fn longest_is_the_largest_length() {
        let naive = |o: &[usize]| o.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let mut seed = 7u64;
        for n in 0..40 {
            let lengths: Vec<usize> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if seed >> 62 == 0 {
                        0
                    } else {
                        (seed >> 33) as usize % 50
                    }
                })
                .collect();
            let offsets = lengths_to_offsets(&[lengths]).unwrap().remove(0);
            assert_eq!(longest(&offsets), naive(&offsets), "{offsets:?}");
            let mut tail_longest = offsets.clone();
            tail_longest.push(offsets[n] + 1000);
            assert_eq!(longest(&tail_longest), 1000, "{tail_longest:?}");
        }
        assert_eq!(longest(&[]), 0);
        let lod = Lod::from_lengths(&[vec![2, 0, 3], vec![1, 0, 7, 2, 0]]).unwrap();
        assert_eq!((lod.lod_level(0).unwrap().longest(), lod.lod_level(1).unwrap().longest()), (3, 7));
        assert_eq!(lod.clone().lod_level(1).unwrap().longest(), 7);
        let e = lod.lod_level(2).err().expect("level 2 of a 2-level LoD").to_string();
        assert!(e.contains("level: 2 is out of range; the LoD has 2 level(s)"), "{e}");
    }

    /// A level in absolute form is `abs_offsets`' level; its copies are kept apart from the level's
    /// own, except for the last level, whose absolute form is itself.
    #[test]
    fn abs_levels_and_their_copies() {
        let lod = Lod::from_offsets(vec![vec![0, 2, 3], vec![0, 2, 2, 7], vec![0, 1, 3, 4, 6, 8, 9, 12]]).unwrap();
        for (level, want) in lod.abs_offsets().iter().enumerate() {
            assert_eq!(&lod.abs_level(level).unwrap(), want, "level {level}");
        }
        assert!(matches!(lod.abs_level(3), Err(crate::Error::OutOfRange(_))));
        let place = Place::Cuda(0);
        let made = |n: usize| move || Allocation::zeroed(8 * n);
        let upper = lod.abs_copy_at(1, place, made(4)).unwrap();
        let level = lod.lod_level(1).unwrap().copy_at(place, |o| made(o.len())()).unwrap();
        assert!(!Arc::ptr_eq(&upper, &level), "level 1 in rows and as it is share a copy");
        let clone = lod.clone();
        let again = clone.abs_copy_at(1, place, || panic!("a clone made level 1 in rows again")).unwrap();
        assert!(Arc::ptr_eq(&upper, &again));
        let last = lod.lod_level(2).unwrap().copy_at(place, |o| made(o.len())()).unwrap();
        let last_abs = clone.abs_copy_at(2, place, || panic!("the last level in rows is the level")).unwrap();
        assert!(Arc::ptr_eq(&last, &last_abs));
        assert!(lod.abs_copy_at(0, Place::Cpu, made(3)).is_ok_and(|c| !Arc::ptr_eq(&c, &upper)));
    }

    /// Pairing with a tensor checks only the last offset, with `check_lod`'s message.
    #[test]
    fn check_rows_is_check_lods_height_rule() {
        let lod = Lod::from_offsets(vec![vec![0, 1, 2], vec![0, 3, 5]]).unwrap();
        assert!(lod.check_rows(5).is_ok());
        for rows in [0, 4, 6] {
            let got = lod.check_rows(rows).unwrap_err().to_string();
            let want = check_lod(lod.levels(), Some(rows)).unwrap_err().to_string();
            assert_eq!(got, want);
            assert!(got.contains(&format!("the tensor has {rows} rows")), "{got}");
        }
        assert!(Lod::empty().check_rows(7).is_ok());
    }
}
