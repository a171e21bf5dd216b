//! The code paths that exist for speed, each checked against a plain reference loop written
//! here: pooling over every column-block shape (register blocks, wide passes, more than one wide
//! pass, tails), row gathers, scatter and padding large enough to use streaming stores, padding of rows of
//! a few bytes, and outputs large enough for their own huge-page mapping; each at 1 and 4 threads.

use lodtensor::backend::cpu::pool::set_num_threads;
use lodtensor::{
    array_to_lod_tensor, beam_search_gather_tree, lod_tensor_to_array, sequence_expand_as, sequence_pad, sequence_pool,
    sequence_scatter, LoDTensor, PoolType, RankTable, Tensor,
};

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn offsets(lengths: &[usize]) -> Vec<usize> {
    let mut o = vec![0];
    for &n in lengths {
        o.push(o[o.len() - 1] + n);
    }
    o
}

/// Sum/mean/max/min per sequence and column, by plain loops (sums in f64, row order).
fn pool_reference(x: &[f64], width: usize, o: &[usize], p: PoolType) -> (Vec<f64>, Vec<i32>) {
    let mut out = vec![];
    let mut index = vec![];
    for w in o.windows(2) {
        for c in 0..width {
            if w[0] == w[1] {
                out.push(0.0);
                index.push(-1);
                continue;
            }
            match p {
                PoolType::Sum | PoolType::Average => {
                    let mut s = 0f64;
                    for r in w[0]..w[1] {
                        s += x[r * width + c];
                    }
                    out.push(if p == PoolType::Sum { s } else { s / (w[1] - w[0]) as f64 });
                }
                _ => {
                    let mut at = w[0];
                    for r in w[0] + 1..w[1] {
                        let (v, b) = (x[r * width + c], x[at * width + c]);
                        if (p == PoolType::Max && v > b) || (p == PoolType::Min && v < b) {
                            at = r;
                        }
                    }
                    out.push(x[at * width + c]);
                    index.push(at as i32);
                }
            }
        }
    }
    (out, index)
}

#[test]
fn pooling_matches_reference_for_every_block_shape() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    // Tails only, one register block, block + tail, the wide pass, two wide passes with a tail.
    for width in [1, 15, 16, 17, 31, 32, 33, 64, 128, 255, 256, 257, 300, 530] {
        // Empty sequences, one-row sequences and long ones.
        let lengths: Vec<usize> =
            (0..40).map(|i| if i % 7 == 3 { 0 } else { (xorshift(&mut seed) % 70) as usize }).collect();
        let o = offsets(&lengths);
        let rows = o[o.len() - 1];
        // Few distinct values, so ties (first extreme wins) happen often.
        let x64: Vec<f64> = (0..rows * width).map(|_| (xorshift(&mut seed) % 50) as f64 * 0.25 - 6.0).collect();
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        let t64 = LoDTensor::from_slice(&x64, &[rows, width], vec![o.clone()]).unwrap();
        let t32 = LoDTensor::from_slice(&x32, &[rows, width], vec![o.clone()]).unwrap();
        for p in [PoolType::Sum, PoolType::Average, PoolType::Max, PoolType::Min] {
            let (want, want_index) = pool_reference(&x64, width, &o, p);
            for threads in [1, 4] {
                set_num_threads(threads).unwrap();
                let got = sequence_pool(&t64, p, 0.0).unwrap();
                assert_eq!(got.out.tensor().as_slice::<f64>().unwrap(), &want[..], "f64 {p:?} width {width}");
                let got32 = sequence_pool(&t32, p, 0.0).unwrap();
                let want32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
                assert_eq!(got32.out.tensor().as_slice::<f32>().unwrap(), &want32[..], "f32 {p:?} width {width}");
                if matches!(p, PoolType::Max | PoolType::Min) {
                    for g in [&got, &got32] {
                        let idx = g.max_index.as_ref().expect("max/min report rows");
                        assert_eq!(idx.tensor().as_slice::<i32>().unwrap(), &want_index[..], "{p:?} width {width}");
                    }
                }
            }
        }
    }
    set_num_threads(0).unwrap();
}

#[test]
fn large_row_gathers_stream_the_same_bytes() {
    // expand_as: 2 KiB rows, 6 MiB of output (streamed); 36 MiB (its own huge-page mapping too);
    // 512-byte rows, streamed because each row's repeats read it in one run.
    let mut seed = 7u64;
    for (n, w, max_repeat) in [(64usize, 512usize, 90usize), (96, 2048, 96), (200, 128, 200)] {
        let x: Vec<f32> = (0..n * w).map(|_| xorshift(&mut seed) as f32).collect();
        let repeats: Vec<usize> =
            (0..n).map(|i| if i == 5 { 0 } else { (xorshift(&mut seed) as usize) % max_repeat + 1 }).collect();
        let total: usize = repeats.iter().sum();
        assert!(total * w * 4 >= 4 << 20, "the case must reach the streaming size");
        let xt = LoDTensor::dense(Tensor::from_slice(&x, &[n, w]).unwrap());
        let y = LoDTensor::from_slice(&vec![0u8; total], &[total, 1], vec![offsets(&repeats)]).unwrap();
        let mut want = Vec::with_capacity(total * w);
        for (h, &k) in repeats.iter().enumerate() {
            for _ in 0..k {
                want.extend_from_slice(&x[h * w..(h + 1) * w]);
            }
        }
        for threads in [1, 4] {
            set_num_threads(threads).unwrap();
            let got = sequence_expand_as(&xt, &y).unwrap();
            assert!(got.tensor().as_slice::<f32>().unwrap() == &want[..], "expand_as {n}x{w}, {threads} threads");
        }
    }
    set_num_threads(0).unwrap();
}

#[test]
fn large_scatter_streams_then_adds_in_id_order() {
    // 64 rows of 32768 f32 (8 MiB: the copy of x is streamed), 40 ids for each of the first 61
    // rows, every seventh repeating an earlier id of its row; sums in id order are exact to compare.
    let (rows, w, per_row, sequences) = (64usize, 32768usize, 40usize, 61usize);
    let mut seed = 11u64;
    let x: Vec<f32> = (0..rows * w).map(|_| (xorshift(&mut seed) % 1000) as f32 * 0.25).collect();
    let mut ids: Vec<i64> = Vec::new();
    for _ in 0..sequences {
        let start = ids.len();
        for k in 0..per_row {
            let id = if k % 7 == 6 { ids[start + k / 2] } else { (xorshift(&mut seed) % w as u64) as i64 };
            ids.push(id);
        }
    }
    let updates: Vec<f32> = (0..ids.len()).map(|_| (xorshift(&mut seed) % 97) as f32 * 0.5 + 0.125).collect();
    let lod = vec![offsets(&vec![per_row; sequences])];
    let mut want = x.clone();
    for (p, (&id, &u)) in ids.iter().zip(&updates).enumerate() {
        want[(p / per_row) * w + id as usize] += u;
    }
    let xt = LoDTensor::dense(Tensor::from_slice(&x, &[rows, w]).unwrap());
    let idt = LoDTensor::from_slice(&ids, &[ids.len(), 1], lod.clone()).unwrap();
    let ut = LoDTensor::from_slice(&updates, &[updates.len(), 1], lod).unwrap();
    for threads in [1, 4] {
        set_num_threads(threads).unwrap();
        let got = sequence_scatter(&xt, &idt, &ut).unwrap();
        assert!(got.tensor().as_slice::<f32>().unwrap() == &want[..], "scatter, {threads} threads");
    }
    set_num_threads(0).unwrap();
}

#[test]
fn large_unpack_and_pack_match_reference() {
    // 2 KiB rows, ~6.5 MB: both directions take the streaming path.
    let mut seed = 11u64;
    let w = 512;
    let lengths: Vec<usize> = (0..32).map(|_| (xorshift(&mut seed) % 150) as usize + 50).collect();
    let o = offsets(&lengths);
    let rows = o[o.len() - 1];
    let x: Vec<f32> = (0..rows * w).map(|_| xorshift(&mut seed) as f32).collect();
    let xt = LoDTensor::from_slice(&x, &[rows, w], vec![o.clone()]).unwrap();
    let table = RankTable::from_lod_tensor(&xt, 0).unwrap();
    // Step t: row t of every sequence longer than t, longest first, ties by index.
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    for threads in [1, 4] {
        set_num_threads(threads).unwrap();
        let array = lod_tensor_to_array(&xt, &table).unwrap();
        for (t, step) in array.as_slice().iter().enumerate() {
            let want: Vec<f32> = order
                .iter()
                .filter(|&&i| lengths[i] > t)
                .flat_map(|&i| x[(o[i] + t) * w..(o[i] + t + 1) * w].iter().copied())
                .collect();
            assert!(step.tensor().as_slice::<f32>().unwrap() == &want[..], "step {t}, {threads} threads");
        }
        let back = array_to_lod_tensor(&array, &table).unwrap();
        assert!(back.tensor().as_slice::<f32>().unwrap() == &x[..], "pack, {threads} threads");
        assert_eq!(back.lod().levels(), std::slice::from_ref(&o));
    }
    set_num_threads(0).unwrap();
}

#[test]
fn padding_matches_reference_for_every_row_size() {
    // Rows of 4, 8, 12 and 2048 bytes (a run of pad rows is written at a time: several runs per
    // slot, a partial last run, unaligned rows); outputs below and above the streaming size.
    let mut seed = 23u64;
    for (width, sequences, max_len, padded) in
        [(1usize, 50usize, 900usize, 3000usize), (3, 40, 500, 700), (512, 30, 90, 100), (3, 700, 600, 800)]
    {
        let lengths: Vec<usize> = (0..sequences)
            .map(|i| if i % 9 == 4 { 0 } else { (xorshift(&mut seed) % max_len as u64) as usize })
            .collect();
        let o = offsets(&lengths);
        let rows = o[o.len() - 1];
        let x: Vec<f32> = (0..rows * width).map(|_| xorshift(&mut seed) as f32).collect();
        let xt = LoDTensor::from_slice(&x, &[rows, width], vec![o.clone()]).unwrap();
        let ids: Vec<i64> = (0..rows as i64).collect();
        let idt = LoDTensor::from_slice(&ids, &[rows, 1], vec![o.clone()]).unwrap();
        // A whole pad step, different in every column; and a scalar pad id.
        let step: Vec<f32> = (0..width).map(|c| -1.0 - c as f32).collect();
        let pad = LoDTensor::dense(Tensor::from_slice(&step, &[width]).unwrap());
        let pad_id = LoDTensor::dense(Tensor::from_slice(&[-7i64], &[1]).unwrap());
        let mut want = Vec::with_capacity(sequences * padded * width);
        let mut want_ids = Vec::with_capacity(sequences * padded);
        for (i, &n) in lengths.iter().enumerate() {
            want.extend_from_slice(&x[o[i] * width..o[i + 1] * width]);
            (n..padded).for_each(|_| want.extend_from_slice(&step));
            want_ids.extend_from_slice(&ids[o[i]..o[i + 1]]);
            want_ids.extend(std::iter::repeat_n(-7, padded - n));
        }
        for threads in [1, 4] {
            set_num_threads(threads).unwrap();
            let (got, _) = sequence_pad(&xt, &pad, padded as i64).unwrap();
            assert!(got.tensor().as_slice::<f32>().unwrap() == &want[..], "width {width}, {threads} threads");
            let (got_ids, _) = sequence_pad(&idt, &pad_id, padded as i64).unwrap();
            assert!(got_ids.tensor().as_slice::<i64>().unwrap() == &want_ids[..], "ids, {threads} threads");
        }
    }
    set_num_threads(0).unwrap();
}

/// gather_tree by following each chain back, the definition.
fn gather_tree_reference(
    ids: &[i64],
    parents: &[i64],
    t: usize,
    b: usize,
    k: usize,
) -> Result<Vec<i64>, (usize, usize, usize)> {
    let at = |s: usize, i: usize, j: usize| (s * b + i) * k + j;
    let mut out = vec![0i64; ids.len()];
    for i in 0..b {
        for j in 0..k {
            if t == 0 {
                continue;
            }
            out[at(t - 1, i, j)] = ids[at(t - 1, i, j)];
            let (mut p, mut from) = (parents[at(t - 1, i, j)], (t - 1, j));
            for s in (0..t - 1).rev() {
                if p < 0 || p >= k as i64 {
                    return Err((from.0, i, from.1));
                }
                out[at(s, i, j)] = ids[at(s, i, p as usize)];
                from = (s, p as usize);
                p = parents[at(s, i, p as usize)];
            }
        }
    }
    Ok(out)
}

#[test]
fn gather_tree_matches_reference_and_names_the_first_bad_parent_in_chain_order() {
    let mut seed = 99u64;
    for (t, b, k) in [(1usize, 3usize, 2usize), (7, 1, 1), (30, 9, 4), (100, 64, 5)] {
        let n = t * b * k;
        let ids: Vec<i64> = (0..n).map(|_| (xorshift(&mut seed) % 1000) as i64).collect();
        let mut parents: Vec<i64> = (0..n).map(|_| (xorshift(&mut seed) % k as u64) as i64).collect();
        let dense = |v: &[i64]| LoDTensor::dense(Tensor::from_slice(v, &[t, b, k]).unwrap());
        let want = gather_tree_reference(&ids, &parents, t, b, k).unwrap();
        let got = beam_search_gather_tree(&dense(&ids), &dense(&parents)).unwrap();
        assert_eq!(got.tensor().as_slice::<i64>().unwrap(), &want[..], "T={t} B={b} beam={k}");
        if t >= 3 && b >= 2 {
            // Two bad parents: a late step of the last batch entry (found first step by step) and
            // an early step of batch entry 0 (found first chain by chain). Every slot is bad so
            // both are followed.
            for j in 0..k {
                parents[(t - 2) * b * k + (b - 1) * k + j] = k as i64;
                parents[b * k + j] = -1;
            }
            let (s, i, j) = gather_tree_reference(&ids, &parents, t, b, k).unwrap_err();
            let e = beam_search_gather_tree(&dense(&ids), &dense(&parents)).unwrap_err().to_string();
            assert!(e.contains(&format!("parents[{s}][{i}][{j}]")), "{e} (want parents[{s}][{i}][{j}])");
        }
    }
}
