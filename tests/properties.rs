//! Property tests on random valid LoDs (empty sequences included), checked against plain
//! reference computations written here.

mod common;

use common::nested_lengths;
use lodtensor::{check_lod, lengths_to_offsets, offsets_to_lengths, Error, LoDTensor, Lod, Tensor};
use proptest::prelude::*;

/// Rows covered by sequence `i` of level `k`, by recursion over the lengths.
fn naive_rows(lengths: &[Vec<usize>], k: usize, i: usize) -> usize {
    if k + 1 == lengths.len() {
        return lengths[k][i];
    }
    let first: usize = lengths[k][..i].iter().sum();
    (first..first + lengths[k][i]).map(|j| naive_rows(lengths, k + 1, j)).sum()
}

/// Absolute row offsets: running sums of `naive_rows` along each level.
fn naive_abs(lengths: &[Vec<usize>]) -> Vec<Vec<usize>> {
    (0..lengths.len())
        .map(|k| {
            let mut offsets = vec![0];
            for i in 0..lengths[k].len() {
                offsets.push(offsets[i] + naive_rows(lengths, k, i));
            }
            offsets
        })
        .collect()
}

/// A tensor of `rows` rows of width 2 holding distinct values.
fn tensor_for(lod: &Lod) -> LoDTensor {
    let rows = lod.rows().unwrap();
    let data: Vec<i32> = (0..rows as i32 * 2).collect();
    LoDTensor::new(Tensor::from_slice(&data, &[rows, 2]).unwrap(), lod.clone()).unwrap()
}

fn data(t: &LoDTensor) -> Vec<i32> {
    t.tensor().as_slice::<i32>().unwrap().to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(256) as u32, ..ProptestConfig::default() })]

    #[test]
    fn lengths_offsets_round_trip(lengths in nested_lengths(12, 3)) {
        let lod = Lod::from_lengths(&lengths).unwrap();
        prop_assert_eq!(lod.lengths(), lengths.clone());
        prop_assert_eq!(offsets_to_lengths(lod.levels()).unwrap(), lengths.clone());
        prop_assert_eq!(lengths_to_offsets(&lengths).unwrap(), lod.levels().to_vec());
    }

    #[test]
    fn abs_offsets_match_naive_walk(lengths in nested_lengths(12, 3)) {
        let lod = Lod::from_lengths(&lengths).unwrap();
        let abs = naive_abs(&lengths);
        prop_assert_eq!(lod.abs_offsets(), abs.clone());
        for (k, level) in abs.iter().enumerate() {
            for i in 0..level.len() - 1 {
                prop_assert_eq!(lod.sequence_rows(k, i).unwrap(), level[i]..level[i + 1]);
            }
        }
    }

    #[test]
    fn split_then_merge_is_identity(lengths in nested_lengths(12, 3), n in 1usize..8) {
        let t = tensor_for(&Lod::from_lengths(&lengths).unwrap());
        let pieces = t.split(n).unwrap();
        let batch = lengths[0].len();
        prop_assert_eq!(pieces.len(), batch.div_ceil(batch.div_ceil(n)));
        let refs: Vec<&LoDTensor> = pieces.iter().collect();
        let merged = LoDTensor::merge(&refs).unwrap();
        prop_assert_eq!(merged.lod(), t.lod());
        prop_assert_eq!(merged.dims(), t.dims());
        prop_assert_eq!(data(&merged), data(&t));
    }

    #[test]
    fn slice_agrees_with_sub_lod(lengths in nested_lengths(12, 3), a in 0usize..12, b in 0usize..12, level_pick in 0usize..4) {
        let lod = Lod::from_lengths(&lengths).unwrap();
        let t = tensor_for(&lod);
        let level = level_pick % lod.num_levels();
        let n = lod.num_sequences(level).unwrap();
        let (begin, end) = (a.min(b) % (n + 1), (a.max(b) + 1).min(n));
        match t.slice(level, begin, end) {
            Ok(s) => {
                let (sub_lengths, rows) = lod.sub_lod_and_abs_offset(begin, end, level).unwrap();
                prop_assert_eq!(s.lod().lengths(), sub_lengths);
                prop_assert_eq!(s.dims().rows(), Some(rows.len()));
                prop_assert_eq!(data(&s), data(&t)[rows.start * 2..rows.end * 2].to_vec());
                prop_assert!(s.tensor().shares_memory_with(t.tensor()));
            }
            Err(e) => {
                prop_assert!(begin >= end, "unexpected error {e}");
                prop_assert!(matches!(e, Error::OutOfRange(_)));
            }
        }
    }

    #[test]
    fn breaking_monotonicity_is_rejected(lengths in nested_lengths(12, 3), pick in any::<usize>()) {
        let mut levels = Lod::from_lengths(&lengths).unwrap().into_levels();
        let k = pick % levels.len();
        prop_assume!(levels[k].len() >= 2);
        // Make offset i-1 larger than offset i: a decrease (or, at i-1 = 0, a non-zero start).
        let i = 1 + pick / levels.len() % (levels[k].len() - 1);
        levels[k][i - 1] = levels[k][i] + 1;
        prop_assert!(matches!(check_lod(&levels, None), Err(Error::InvalidLod(_))));
    }
}
