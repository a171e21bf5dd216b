//! scatter_rows (the library's own rule; see `lodtensor::ops::scatter_rows`): worked examples
//! derived by hand, property tests against a plain sequential loop written here for every dtype
//! and both modes, thread-count determinism, and every error.

mod common;

use common::{pow2, with_1_and_4_threads, Rng};
use half::{bf16, f16};
use lodtensor::{scatter_rows, DType, Dim, Element, Error, LoDTensor, Lod, ScatterMode, Tensor};
use proptest::prelude::*;

use ScatterMode::{Add, Overwrite};

fn dense<T: Element>(v: &[T], dims: &[usize]) -> LoDTensor {
    LoDTensor::dense(Tensor::from_slice(v, dims).unwrap())
}

fn values<T: Element>(t: &LoDTensor) -> Vec<T> {
    t.tensor().as_slice::<T>().unwrap().to_vec()
}

fn bytes_of<T: Element>(v: &[T]) -> Vec<u8> {
    Tensor::from_slice(v, &[v.len()]).unwrap().bytes().unwrap().to_vec()
}

// Paddle's scatter doc example. x = [[1,1],[2,2],[3,3]], index = [2,1,0,1],
// updates = [[1,1],[2,2],[3,3],[4,4]].
// OVERWRITE, i in order: out[2] = [1,1]; out[1] = [2,2]; out[0] = [3,3]; out[1] = [4,4] (the last
// write to row 1 wins) -> [[3,3],[4,4],[1,1]].
// ADD, i in order: out[2] = [3,3]+[1,1] = [4,4]; out[1] = [2,2]+[2,2] = [4,4];
// out[0] = [1,1]+[3,3] = [4,4]; out[1] = [4,4]+[4,4] = [8,8] -> [[4,4],[8,8],[4,4]].
#[test]
fn paddle_doc_example() {
    let x = dense(&[1f32, 1., 2., 2., 3., 3.], &[3, 2]);
    let upd = dense(&[1f32, 1., 2., 2., 3., 3., 4., 4.], &[4, 2]);
    for index in [dense(&[2i64, 1, 0, 1], &[4]), dense(&[2i32, 1, 0, 1], &[4, 1])] {
        let o = scatter_rows(&x, &index, &upd, Overwrite).unwrap();
        assert_eq!(values::<f32>(&o), [3., 3., 4., 4., 1., 1.]);
        assert_eq!(o.dims().as_slice(), &[3, 2]);
        let a = scatter_rows(&x, &index, &upd, Add).unwrap();
        assert_eq!(values::<f32>(&a), [4., 4., 8., 8., 4., 4.]);
    }
    assert_eq!(values::<f32>(&x), [1., 1., 2., 2., 3., 3.], "x is not modified");
}

// A 1-d x: rows are single elements and updates is [M]. x = [10,20,30,40,50], index = [4,0,4],
// updates = [1,2,3]. OVERWRITE: out[4] = 1, out[0] = 2, out[4] = 3 -> [2,20,30,40,3].
// ADD: out[4] = 50+1 = 51, out[0] = 10+2 = 12, out[4] = 51+3 = 54 -> [12,20,30,40,54].
#[test]
fn one_dimensional_x() {
    let x = dense(&[10i64, 20, 30, 40, 50], &[5]);
    let index = dense(&[4i64, 0, 4], &[3]);
    let upd = dense(&[1i64, 2, 3], &[3]);
    assert_eq!(values::<i64>(&scatter_rows(&x, &index, &upd, Overwrite).unwrap()), [2, 20, 30, 40, 3]);
    assert_eq!(values::<i64>(&scatter_rows(&x, &index, &upd, Add).unwrap()), [12, 20, 30, 40, 54]);
}

// A 3-d x [3, 2, 2] with a LoD [[0, 1, 3]]: a row is a 2x2 block, and the result keeps x's LoD
// (the LoDs of index and updates are ignored). x row r holds 10r+1..10r+4; index = [1], updates =
// [[[100,200],[300,400]]]. OVERWRITE replaces row 1 with the block; ADD gives 111,212,313,414.
#[test]
fn rows_of_higher_rank_keep_x_lod() {
    let xv: Vec<f64> = (0..3).flat_map(|r| (1..=4).map(move |c| (10 * r + c) as f64)).collect();
    let x = LoDTensor::from_slice(&xv, &[3, 2, 2], vec![vec![0, 1, 3]]).unwrap();
    let index = LoDTensor::from_slice(&[1i64], &[1, 1], vec![vec![0, 1]]).unwrap();
    let upd = LoDTensor::from_slice(&[100f64, 200., 300., 400.], &[1, 2, 2], vec![vec![0, 1]]).unwrap();
    let o = scatter_rows(&x, &index, &upd, Overwrite).unwrap();
    assert_eq!(values::<f64>(&o), [1., 2., 3., 4., 100., 200., 300., 400., 21., 22., 23., 24.]);
    assert_eq!(o.lod(), x.lod());
    assert_eq!(o.dims().as_slice(), &[3, 2, 2]);
    let a = scatter_rows(&x, &index, &upd, Add).unwrap();
    assert_eq!(values::<f64>(&a), [1., 2., 3., 4., 111., 212., 313., 414., 21., 22., 23., 24.]);
    assert_eq!(a.lod(), x.lod());
}

// M = 0: nothing is written, the result equals x (both modes); N = 0 with M = 0 gives an empty
// [0, 3] tensor.
#[test]
fn empty_index() {
    let x = LoDTensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3], vec![vec![0, 2]]).unwrap();
    let index = dense::<i64>(&[], &[0]);
    let upd = dense::<i32>(&[], &[0, 3]);
    for mode in [Overwrite, Add] {
        let o = scatter_rows(&x, &index, &upd, mode).unwrap();
        assert_eq!(values::<i32>(&o), [1, 2, 3, 4, 5, 6]);
        assert_eq!(o.lod(), x.lod());
        let e =
            scatter_rows(&dense::<f32>(&[], &[0, 3]), &dense::<i32>(&[], &[0, 1]), &dense::<f32>(&[], &[0, 3]), mode)
                .unwrap();
        assert_eq!(e.dims().as_slice(), &[0, 3]);
        // Rows of zero width: nothing to move, but the index is still checked.
        let z = dense::<f32>(&[], &[2, 0]);
        let zu = dense::<f32>(&[], &[1, 0]);
        assert_eq!(scatter_rows(&z, &dense(&[1i64], &[1]), &zu, mode).unwrap().dims().as_slice(), &[2, 0]);
        assert!(matches!(scatter_rows(&z, &dense(&[2i64], &[1]), &zu, mode), Err(Error::OutOfRange(_))));
    }
}

// Integers wrap: uint8 250 + 10 = 260 - 256 = 4; int8 127 + 1 = -128; int32 i32::MAX + 1 = i32::MIN.
#[test]
fn integers_wrap() {
    let one = dense(&[0i64], &[1]);
    let u = scatter_rows(&dense(&[250u8], &[1]), &one, &dense(&[10u8], &[1]), Add).unwrap();
    assert_eq!(values::<u8>(&u), [4]);
    let i = scatter_rows(&dense(&[127i8], &[1]), &one, &dense(&[1i8], &[1]), Add).unwrap();
    assert_eq!(values::<i8>(&i), [-128]);
    let w = scatter_rows(&dense(&[i32::MAX], &[1]), &one, &dense(&[1i32], &[1]), Add).unwrap();
    assert_eq!(values::<i32>(&w), [i32::MIN]);
}

// float16/bfloat16 round every addition to the dtype (our rule). float16's spacing at 1.0 is
// 2^-10; adding 2^-11 to 1.0 is a tie that rounds to even, 1.0, and so does the second add: the
// result is 1.0. (Summing the two updates in float32 first would give 1 + 2^-10, representable.)
// bfloat16's spacing at 1.0 is 2^-7, so updates of 2^-8 behave the same.
#[test]
fn half_types_round_each_addition() {
    let index = dense(&[0i64, 0], &[2]);
    let h = scatter_rows(
        &dense(&[f16::ONE], &[1]),
        &index,
        &dense(&[f16::from_f64(pow2(-11)), f16::from_f64(pow2(-11))], &[2]),
        Add,
    )
    .unwrap();
    assert_eq!(values::<f16>(&h), [f16::ONE]);
    let b = scatter_rows(
        &dense(&[bf16::ONE], &[1]),
        &index,
        &dense(&[bf16::from_f64(pow2(-8)), bf16::from_f64(pow2(-8))], &[2]),
        Add,
    )
    .unwrap();
    assert_eq!(values::<bf16>(&b), [bf16::ONE]);
    // A third update of 2^-10 (float16) then lands exactly: 1 + 2^-10.
    let h3 = scatter_rows(
        &dense(&[f16::ONE], &[1]),
        &dense(&[0i64, 0, 0], &[3]),
        &dense(&[f16::from_f64(pow2(-11)), f16::from_f64(pow2(-11)), f16::from_f64(pow2(-10))], &[3]),
        Add,
    )
    .unwrap();
    assert_eq!(values::<f16>(&h3), [f16::from_f64(1.0 + pow2(-10))]);
}

// Floats add in increasing position: x = 1e8 (float32 spacing 8 there), updates [3, 3, -1e8]:
// 1e8 + 3 -> 1e8 (3 < 4, half the spacing, rounds down), again 1e8, then 0. Any other order
// (e.g. -1e8 first) would give 6.
#[test]
fn float_sums_follow_position_order() {
    let a = scatter_rows(&dense(&[1e8f32], &[1]), &dense(&[0i64, 0, 0], &[3]), &dense(&[3f32, 3., -1e8], &[3]), Add)
        .unwrap();
    assert_eq!(values::<f32>(&a), [0.]);
}

/// The plain sequential loop's addition, per dtype, written here (not the library's).
trait RefElem: Element {
    fn random(rng: &mut Rng) -> Self;
    fn ref_add(self, other: Self) -> Self;
}

macro_rules! ref_int {
    ($($t:ty),*) => {$(
        impl RefElem for $t {
            fn random(rng: &mut Rng) -> Self { rng.next() as $t }
            fn ref_add(self, other: Self) -> Self { self.wrapping_add(other) }
        }
    )*};
}
ref_int!(u8, i8, i16, i32, i64);

/// Values of mixed magnitudes, so that the order of the additions changes the rounding.
fn mixed(rng: &mut Rng) -> f64 {
    let m = (rng.below(2001) as f64 - 1000.0) / 7.0;
    m * 10f64.powi(rng.below(6) as i32 - 3)
}

impl RefElem for f32 {
    fn random(rng: &mut Rng) -> Self {
        mixed(rng) as f32
    }
    fn ref_add(self, other: Self) -> Self {
        self + other
    }
}
impl RefElem for f64 {
    fn random(rng: &mut Rng) -> Self {
        mixed(rng)
    }
    fn ref_add(self, other: Self) -> Self {
        self + other
    }
}
impl RefElem for f16 {
    fn random(rng: &mut Rng) -> Self {
        f16::from_f64(mixed(rng))
    }
    fn ref_add(self, other: Self) -> Self {
        f16::from_f32(self.to_f32() + other.to_f32())
    }
}
impl RefElem for bf16 {
    fn random(rng: &mut Rng) -> Self {
        bf16::from_f64(mixed(rng))
    }
    fn ref_add(self, other: Self) -> Self {
        bf16::from_f32(self.to_f32() + other.to_f32())
    }
}

/// The sequential loop: `out = x`, then for i in order `out[index[i]] = updates[i]` (overwrite)
/// or `+= updates[i]` (add), element by element.
fn reference<T: RefElem>(x: &[T], width: usize, index: &[i64], upd: &[T], mode: ScatterMode) -> Vec<T> {
    let mut out = x.to_vec();
    for (i, &r) in index.iter().enumerate() {
        for c in 0..width {
            let (o, u) = (r as usize * width + c, i * width + c);
            out[o] = match mode {
                Overwrite => upd[u],
                Add => out[o].ref_add(upd[u]),
            };
        }
    }
    out
}

/// Random indices in [0, n): from all rows, or from a few rows only (many repeats).
fn random_index(rng: &mut Rng, n: usize, m: usize) -> Vec<i64> {
    let pool = if rng.below(2) == 0 { n } else { n.min(1 + rng.below(3)) };
    (0..m).map(|_| rng.below(pool) as i64).collect()
}

/// x of dims [n, row...] (with a LoD half the time), an int32 or int64 index [m] or [m, 1] (with a
/// LoD sometimes, which must be ignored), updates [m, row...]; both modes against the reference.
fn check<T: RefElem>(n: usize, m: usize, row: &[usize], seed: u64) {
    let mut rng = Rng(seed | 1);
    let width: usize = row.iter().product();
    let x: Vec<T> = (0..n * width).map(|_| T::random(&mut rng)).collect();
    let upd: Vec<T> = (0..m * width).map(|_| T::random(&mut rng)).collect();
    let index = if n == 0 { vec![] } else { random_index(&mut rng, n, m) };
    let m = index.len();
    let upd = &upd[..m * width];
    let x_lod =
        if n > 0 && rng.below(2) == 0 { Lod::from_lengths(&[vec![n / 2, n - n / 2]]).unwrap() } else { Lod::empty() };
    let xt = LoDTensor::new(Tensor::from_slice(&x, &[&[n], row].concat()).unwrap(), x_lod).unwrap();
    let ut = dense(upd, &[&[m], row].concat());
    let it = match rng.below(3) {
        0 => dense(&index, &[m]),
        1 => dense(&index.iter().map(|&v| v as i32).collect::<Vec<_>>(), &[m, 1]),
        _ if m > 0 => LoDTensor::from_slice(&index, &[m, 1], vec![vec![0, m]]).unwrap(),
        _ => dense(&index, &[m, 1]),
    };
    for mode in [Overwrite, Add] {
        let want = reference(&x, width, &index, upd, mode);
        let out = scatter_rows(&xt, &it, &ut, mode).unwrap();
        assert_eq!(out.tensor().bytes().unwrap(), bytes_of(&want), "{} {mode:?} n {n} m {m} row {row:?}", T::DTYPE);
        assert_eq!(out.lod(), xt.lod());
        assert_eq!(out.dims(), xt.dims());
    }
    assert_eq!(xt.tensor().bytes().unwrap(), bytes_of(&x), "x is not modified");
}

/// bool: OVERWRITE moves the bytes (0/1), ADD is Unsupported.
fn check_bool(n: usize, m: usize, row: &[usize], seed: u64) {
    let mut rng = Rng(seed | 1);
    let width: usize = row.iter().product();
    let x: Vec<u8> = (0..n * width).map(|_| rng.below(2) as u8).collect();
    let upd: Vec<u8> = (0..m * width).map(|_| rng.below(2) as u8).collect();
    let index = if n == 0 { vec![] } else { random_index(&mut rng, n, m) };
    let m = index.len();
    let upd = &upd[..m * width];
    let xt = LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[&[n], row].concat()).unwrap(), &x).unwrap());
    let ut = LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[&[m], row].concat()).unwrap(), upd).unwrap());
    let it = dense(&index, &[m]);
    let out = scatter_rows(&xt, &it, &ut, Overwrite).unwrap();
    assert_eq!(out.tensor().bytes().unwrap(), reference(&x, width, &index, upd, Overwrite).as_slice());
    assert!(matches!(scatter_rows(&xt, &it, &ut, Add), Err(Error::Unsupported(e)) if e.contains("bool")));
}

fn check_dtype(dt: usize, n: usize, m: usize, row: &[usize], seed: u64) {
    match DType::ALL[dt] {
        DType::Bool => check_bool(n, m, row, seed),
        DType::U8 => check::<u8>(n, m, row, seed),
        DType::I8 => check::<i8>(n, m, row, seed),
        DType::I16 => check::<i16>(n, m, row, seed),
        DType::I32 => check::<i32>(n, m, row, seed),
        DType::I64 => check::<i64>(n, m, row, seed),
        DType::F16 => check::<f16>(n, m, row, seed),
        DType::BF16 => check::<bf16>(n, m, row, seed),
        DType::F32 => check::<f32>(n, m, row, seed),
        DType::F64 => check::<f64>(n, m, row, seed),
    }
}

#[test]
fn every_dtype_small_cases() {
    for dt in 0..DType::ALL.len() {
        for (n, m, row) in [(0, 0, &[3][..]), (1, 0, &[2]), (1, 5, &[2]), (5, 3, &[]), (4, 9, &[2, 3]), (7, 20, &[1])] {
            check_dtype(dt, n, m, row, 11 + dt as u64);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(96) as u32, ..ProptestConfig::default() })]

    #[test]
    fn matches_sequential_loop(dt in 0usize..10, n in 0usize..40, m in 0usize..120, rank in 0usize..3,
                               w in 0usize..6, big in any::<bool>(), seed in any::<u64>()) {
        // Rows of 0 to 5 elements in 1-d, 2-d and 3-d shapes; sometimes thousands of rows.
        let row: Vec<usize> = [vec![], vec![w], vec![w, 2]][rank].clone();
        let (n, m) = if big { (n * 100, m * 50) } else { (n, m) };
        check_dtype(dt, n, m, &row, seed);
    }
}

// > 256 KiB of output, so the kernels go parallel: identical bytes with 1 and 4 threads, equal to
// the sequential loop. Heavy repeats (a third of the updates go to 8 rows) load one task far more.
#[test]
fn thread_count_determinism() {
    let (n, m, width) = (20_000, 60_000, 16);
    let mut rng = Rng(77);
    let x: Vec<f32> = (0..n * width).map(|_| f32::random(&mut rng)).collect();
    let upd: Vec<f32> = (0..m * width).map(|_| f32::random(&mut rng)).collect();
    let index: Vec<i64> = (0..m).map(|i| if i % 3 == 0 { rng.below(8) as i64 } else { rng.below(n) as i64 }).collect();
    let (xt, it, ut) = (dense(&x, &[n, width]), dense(&index, &[m]), dense(&upd, &[m, width]));
    let xh: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let uh: Vec<f16> = upd.iter().map(|&v| f16::from_f32(v)).collect();
    let (xht, uht) = (dense(&xh, &[n, width]), dense(&uh, &[m, width]));
    let run = || {
        [
            scatter_rows(&xt, &it, &ut, Add).unwrap(),
            scatter_rows(&xt, &it, &ut, Overwrite).unwrap(),
            scatter_rows(&xht, &it, &uht, Add).unwrap(),
        ]
    };
    let (one, four) = with_1_and_4_threads(run);
    assert!(one[0].tensor().nbytes() > 256 * 1024);
    for (a, b) in one.iter().zip(&four) {
        assert_eq!(a.tensor().bytes().unwrap(), b.tensor().bytes().unwrap());
    }
    assert_eq!(one[0].tensor().bytes().unwrap(), bytes_of(&reference(&x, width, &index, &upd, Add)));
    assert_eq!(one[1].tensor().bytes().unwrap(), bytes_of(&reference(&x, width, &index, &upd, Overwrite)));
    assert_eq!(one[2].tensor().bytes().unwrap(), bytes_of(&reference(&xh, width, &index, &uh, Add)));
}

fn err_of(r: lodtensor::Result<LoDTensor>) -> Error {
    r.map(|_| ()).unwrap_err()
}

#[test]
fn errors() {
    let x = dense(&[0f32; 6], &[3, 2]);
    let upd = dense(&[1f32; 4], &[2, 2]);
    let idx = dense(&[0i64, 2], &[2]);
    for mode in [Overwrite, Add] {
        // Out of range, naming the position and the value; negative indices do not wrap.
        let e = err_of(scatter_rows(&x, &dense(&[0i64, 3], &[2]), &upd, mode));
        assert!(matches!(&e, Error::OutOfRange(m) if m.contains("index[1] = 3") && m.contains("[0, 3)")), "{e}");
        let e = err_of(scatter_rows(&x, &dense(&[-1i32, 0], &[2, 1]), &upd, mode));
        assert!(matches!(&e, Error::OutOfRange(m) if m.contains("index[0] = -1")), "{e}");
        // 0-d x.
        let e = err_of(scatter_rows(&dense(&[1f32], &[]), &idx, &upd, mode));
        assert!(matches!(&e, Error::InvalidArgument(m) if m.starts_with("x:")), "{e}");
        // index: not int32/int64; not [M] or [M, 1]; 0-d.
        let e = err_of(scatter_rows(&x, &dense(&[0f32, 2.], &[2]), &upd, mode));
        assert!(matches!(&e, Error::Unsupported(m) if m.starts_with("index:")), "{e}");
        let e = err_of(scatter_rows(&x, &dense(&[0i64, 2], &[1, 2]), &upd, mode));
        assert!(matches!(&e, Error::InvalidArgument(m) if m.starts_with("index:")), "{e}");
        let e = err_of(scatter_rows(&x, &dense(&[0i64], &[]), &upd, mode));
        assert!(matches!(&e, Error::InvalidArgument(m) if m.starts_with("index:")), "{e}");
        // updates: wrong row count, row shape, rank, dtype.
        for bad in [
            dense(&[1f32; 6], &[3, 2]),
            dense(&[1f32; 6], &[2, 3]),
            dense(&[1f32; 4], &[2, 2, 1]),
            dense(&[1f32; 2], &[2]),
        ] {
            let e = err_of(scatter_rows(&x, &idx, &bad, mode));
            assert!(
                matches!(&e, Error::InvalidArgument(m) if m.starts_with("updates:") && m.contains("[2, 2]")),
                "{e}"
            );
        }
        let e = err_of(scatter_rows(&x, &idx, &dense(&[1f64; 4], &[2, 2]), mode));
        assert!(matches!(&e, Error::InvalidArgument(m) if m.starts_with("updates:") && m.contains("float64")), "{e}");
    }
    // bool: OVERWRITE moves bytes, ADD is Unsupported.
    let bx = LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[3, 2]).unwrap(), &[0u8; 6]).unwrap());
    let bu = LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[2, 2]).unwrap(), &[1u8; 4]).unwrap());
    assert_eq!(scatter_rows(&bx, &idx, &bu, Overwrite).unwrap().tensor().bytes().unwrap(), [1, 1, 0, 0, 1, 1]);
    let e = err_of(scatter_rows(&bx, &idx, &bu, Add));
    assert!(matches!(&e, Error::Unsupported(m) if m.contains("bool")), "{e}");
}
