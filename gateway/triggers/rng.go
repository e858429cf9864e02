package triggers

import (
	"math"
	"math/big"
)

// mt19937 reproduces Python's random.Random so seeded exponential intervals
// give the reference's schedules: MT19937 seeded by
// init_by_array over the 32-bit little-endian words of abs(seed).
type mt19937 struct {
	mt  [624]uint32
	idx int
}

func newPythonRandom(seed *big.Int) *mt19937 {
	n := new(big.Int).Abs(seed)
	var key []uint32
	words := n.Bits() // little-endian machine words
	for _, w := range words {
		key = append(key, uint32(w))
		if bitsPerWord == 64 {
			key = append(key, uint32(uint64(w)>>32))
		}
	}
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r := &mt19937{}
	r.initByArray(key)
	return r
}

const bitsPerWord = 32 << (^uint(0) >> 63)

func (r *mt19937) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

func (r *mt19937) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := 624
	if len(key) > k {
		k = len(key)
	}
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *mt19937) uint32() uint32 {
	if r.idx >= 624 {
		for k := 0; k < 624; k++ {
			y := (r.mt[k] & 0x80000000) | (r.mt[(k+1)%624] & 0x7fffffff)
			v := r.mt[(k+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// random is Python's random(): 53 random bits in [0, 1).
func (r *mt19937) random() float64 {
	a := r.uint32() >> 5
	b := r.uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// expovariate is Python's expovariate(lambd).
func (r *mt19937) expovariate(lambd float64) float64 {
	return -math.Log(1.0-r.random()) / lambd
}
