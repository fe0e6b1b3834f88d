//! Where each operation goes, with FileBench's semantics: random offsets are uniform over the
//! working set and rounded down to a multiple of iosize; sequential reads wrap at end of file;
//! sequential writes grow a file (and wrap only on a block device, which cannot grow).

use iowatt_metrics::Rng;

pub enum Offsets {
    Random {
        rng: Rng,
        blocks: u64,
        iosize: u64,
    },
    SeqRead {
        next: u64,
        size: u64,
        iosize: u64,
    },
    SeqWrite {
        next: u64,
        wrap: Option<u64>,
        iosize: u64,
    },
}

impl Offsets {
    pub fn random(rng: Rng, span: u64, iosize: u64) -> Self {
        Offsets::Random {
            rng,
            blocks: (span / iosize).max(1),
            iosize,
        }
    }

    #[inline]
    pub fn next(&mut self) -> u64 {
        match self {
            Offsets::Random {
                rng,
                blocks,
                iosize,
            } => rng.below(*blocks) * *iosize,
            Offsets::SeqRead { next, size, iosize } => {
                if *next + *iosize > *size {
                    *next = 0;
                }
                let off = *next;
                *next += *iosize;
                off
            }
            Offsets::SeqWrite { next, wrap, iosize } => {
                if let Some(limit) = wrap {
                    if *next + *iosize > *limit {
                        *next = 0;
                    }
                }
                let off = *next;
                *next += *iosize;
                off
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_offsets_are_aligned_and_inside_the_span() {
        let mut o = Offsets::random(Rng::new(1), 1 << 20, 8192);
        for _ in 0..10_000 {
            let off = o.next();
            assert_eq!(off % 8192, 0);
            assert!(off + 8192 <= 1 << 20);
        }
    }

    #[test]
    fn sequential_reads_wrap_at_end_of_file() {
        let mut o = Offsets::SeqRead {
            next: 0,
            size: 3 * 4096,
            iosize: 4096,
        };
        let got: Vec<u64> = (0..5).map(|_| o.next()).collect();
        assert_eq!(got, [0, 4096, 8192, 0, 4096]);
    }

    #[test]
    fn sequential_writes_grow_a_file_and_wrap_on_a_device() {
        let mut file = Offsets::SeqWrite {
            next: 0,
            wrap: None,
            iosize: 10,
        };
        assert_eq!(
            (0..4).map(|_| file.next()).collect::<Vec<_>>(),
            [0, 10, 20, 30]
        );
        let mut dev = Offsets::SeqWrite {
            next: 0,
            wrap: Some(25),
            iosize: 10,
        };
        assert_eq!(
            (0..4).map(|_| dev.next()).collect::<Vec<_>>(),
            [0, 10, 0, 10]
        );
    }
}
