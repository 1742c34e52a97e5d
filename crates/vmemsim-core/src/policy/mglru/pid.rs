//! Tiers and the PI controller of MG-LRU (mm/vmscan.c "PID controller": `read_ctrl_pos`,
//! `reset_ctrl_pos`, `positive_ctrl_err`, `get_tier_idx`, `get_type_to_scan`).
//!
//! Per type and tier the controller keeps refaulted / (evicted + protected) for the generation
//! being evicted (the P term) and an average over the previous ones with smoothing 1/2 (the
//! I term); there is no D term. `NR_HIST_GENS` is 1 (CONFIG_LRU_GEN_STATS off, the default),
//! so the current counters are folded into the averages and cleared each time `min_seq` of
//! the type advances (`reset_ctrl_pos(.., carryover = true)`), and clearing on `inc_max_seq`
//! is a no-op.

/// `MAX_NR_TIERS`.
pub const MAX_NR_TIERS: usize = 4;
/// `LRU_REFS_WIDTH` (= MAX_NR_TIERS - 2 spare folio flag bits).
pub const LRU_REFS_WIDTH: u32 = 2;
/// `MIN_LRU_BATCH` (BITS_PER_LONG).
pub const MIN_LRU_BATCH: u64 = 64;

/// `lru_tier_from_refs`: order_base_2(refs + 1), i.e. refs 0,1,2,3,4 → tiers 0,1,2,2,3.
#[inline]
pub fn tier_from_refs(refs: u32) -> usize {
    let n = refs + 1;
    // order_base_2(n) = ceil(log2(n)); n >= 1
    (32 - (n - 1).leading_zeros()) as usize
}

/// `struct ctrl_pos`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtrlPos {
    pub refaulted: u64,
    pub total: u64,
    pub gain: u64,
}

/// `positive_ctrl_err`: true if the PV has few refaults or a refault rate not above the SP's.
#[inline]
pub fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted as u128 * (sp.total + MIN_LRU_BATCH) as u128 * sp.gain as u128
            <= (sp.refaulted + 1) as u128 * pv.total as u128 * pv.gain as u128
}

/// The refault / eviction history of one lruvec (`lru_gen_folio`'s `avg_*`, `refaulted`,
/// `evicted`, `protected`), indexed `[type][tier]`.
#[derive(Clone, Debug, Default)]
pub struct Pid {
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    pub protected: [[u64; MAX_NR_TIERS - 1]; 2],
}

impl Pid {
    /// `read_ctrl_pos`.
    pub fn read_ctrl_pos(&self, ty: usize, tier: usize, gain: u64) -> CtrlPos {
        let mut total = self.avg_total[ty][tier] + self.evicted[ty][tier];
        if tier > 0 {
            total += self.protected[ty][tier - 1];
        }
        CtrlPos {
            refaulted: self.avg_refaulted[ty][tier] + self.refaulted[ty][tier],
            total,
            gain,
        }
    }

    /// `reset_ctrl_pos(lruvec, type, true)` with `NR_HIST_GENS` = 1: fold the current
    /// generation into the averages (halving), then clear it.
    pub fn carryover(&mut self, ty: usize) {
        for tier in 0..MAX_NR_TIERS {
            self.avg_refaulted[ty][tier] =
                (self.avg_refaulted[ty][tier] + self.refaulted[ty][tier]) / 2;
            let mut sum = self.avg_total[ty][tier] + self.evicted[ty][tier];
            if tier > 0 {
                sum += self.protected[ty][tier - 1];
            }
            self.avg_total[ty][tier] = sum / 2;
            self.refaulted[ty][tier] = 0;
            self.evicted[ty][tier] = 0;
            if tier > 0 {
                self.protected[ty][tier - 1] = 0;
            }
        }
    }

    /// `get_tier_idx`: the last tier of `ty` that is not protected, comparing each higher tier
    /// (gain 2) with tier 0 (gain 1).
    pub fn tier_idx(&self, ty: usize) -> usize {
        let sp = self.read_ctrl_pos(ty, 0, 1);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(ty, tier, 2);
            if !positive_ctrl_err(&sp, &pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// `get_type_to_scan`: compare tier 0 of anon (gain swappiness) with tier 0 of file
    /// (gain 200 - swappiness); returns (type, tier_idx), type 0 = anon, 1 = file.
    pub fn type_to_scan(&self, swappiness: u32) -> (usize, usize) {
        let gain = [swappiness as u64, 200 - swappiness as u64];
        let sp = self.read_ctrl_pos(0, 0, gain[0]);
        let pv = self.read_ctrl_pos(1, 0, gain[1]);
        let ty = positive_ctrl_err(&sp, &pv) as usize;
        let sp = self.read_ctrl_pos(1 - ty, 0, gain[1 - ty]);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(ty, tier, gain[ty]);
            if !positive_ctrl_err(&sp, &pv) {
                break;
            }
            tier += 1;
        }
        (ty, tier - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_from_refs() {
        // KERNEL-FACTS: refs 0..4 → tiers 0,1,2,2,3.
        let t: Vec<usize> = (0..=4).map(tier_from_refs).collect();
        assert_eq!(t, vec![0, 1, 2, 2, 3]);
    }

    #[test]
    fn ctrl_err_by_hand() {
        let sp = CtrlPos {
            refaulted: 100,
            total: 1000,
            gain: 1,
        };
        // Fewer than MIN_LRU_BATCH refaults: always positive.
        let pv = CtrlPos {
            refaulted: 63,
            total: 63,
            gain: 2,
        };
        assert!(positive_ctrl_err(&sp, &pv));
        // pv 200/1000 at gain 2: 200*(1000+64)*1 = 212800 <= 101*1000*2 = 202000? no.
        let pv = CtrlPos {
            refaulted: 200,
            total: 1000,
            gain: 2,
        };
        assert!(!positive_ctrl_err(&sp, &pv));
        // pv 190/1000: 190*1064 = 202160 > 202000 → not positive; 189*1064 = 201096 → positive.
        let pv190 = CtrlPos {
            refaulted: 190,
            ..pv
        };
        let pv189 = CtrlPos {
            refaulted: 189,
            ..pv
        };
        assert!(!positive_ctrl_err(&sp, &pv190));
        assert!(positive_ctrl_err(&sp, &pv189));
    }

    #[test]
    fn type_choice_follows_swappiness_gains() {
        let mut p = Pid::default();
        // anon tier 0: 100 refaults of 1000 evicted; file tier 0: 100 of 1000.
        p.refaulted[0][0] = 100;
        p.evicted[0][0] = 1000;
        p.refaulted[1][0] = 100;
        p.evicted[1][0] = 1000;
        // swappiness 60: sp = anon (gain 60), pv = file (gain 140):
        // 100*(1000+64)*60 = 6,384,000 <= 101*1000*140 = 14,140,000 → file.
        assert_eq!(p.type_to_scan(60).0, 1);
        // swappiness 150: 100*1064*150 = 15,960,000 <= 101*1000*50 = 5,050,000? no → anon.
        assert_eq!(p.type_to_scan(150).0, 0);
        // Folding into the averages halves: avg = (0 + 100)/2 = 50 refaulted, 500 total.
        p.carryover(0);
        assert_eq!(
            p.read_ctrl_pos(0, 0, 1),
            CtrlPos {
                refaulted: 50,
                total: 500,
                gain: 1
            }
        );
    }

    #[test]
    fn tier_protected_when_refaulting_more() {
        let mut p = Pid::default();
        p.refaulted[1][0] = 10;
        p.evicted[1][0] = 1000;
        // tier 1: 500 refaults of 1000 → 500*(1000+64)*1 = 532000 > 11*1000*2 = 22000
        p.refaulted[1][1] = 500;
        p.evicted[1][1] = 1000;
        assert_eq!(p.tier_idx(1), 0);
        // tier 1 quiet, tier 2 hot → idx 1.
        p.refaulted[1][1] = 0;
        p.refaulted[1][2] = 500;
        p.evicted[1][2] = 1000;
        assert_eq!(p.tier_idx(1), 1);
        p.refaulted[1][2] = 0;
        assert_eq!(p.tier_idx(1), 3);
    }
}
