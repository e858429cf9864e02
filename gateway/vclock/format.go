package vclock

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxInstant is the latest representable virtual instant; reads saturate
// there instead of failing (the reference's datetime.max).
var MaxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)

// MinInstant is the earliest representable virtual instant.
var MinInstant = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxRate is the fastest clock: one real second is one virtual day.
const MaxRate = 86400.0

// rfc3339 is the strict grammar: seconds mandatory, offset hh:mm or Z, no
// surrounding whitespace (the anchors), no basic/week/ordinal forms.
var rfc3339 = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$`)

const rfc3339Shape = "YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm)"

// ParseTime parses a strict RFC 3339 instant and normalises it to UTC with
// microsecond precision (extra fraction digits are truncated, as Python's
// datetime does). field names the value in error messages.
func ParseTime(field, text string) (time.Time, error) {
	m := rfc3339.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, fmt.Errorf("invalid RFC3339 %s %s: expected %s", field, pyQuote(text), rfc3339Shape)
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	year, month, day := atoi(m[1]), atoi(m[2]), atoi(m[3])
	hour, minute, sec := atoi(m[4]), atoi(m[5]), atoi(m[6])
	micro := 0
	if f := m[7]; f != "" {
		if len(f) > 6 {
			f = f[:6]
		}
		f += strings.Repeat("0", 6-len(f))
		micro = atoi(f)
	}
	bad := func(detail string) (time.Time, error) {
		return time.Time{}, fmt.Errorf("invalid RFC3339 %s %s: %s", field, pyQuote(text), detail)
	}
	if year < 1 {
		return bad("year 0 is out of range")
	}
	if month < 1 || month > 12 {
		return bad("month must be in 1..12")
	}
	if day < 1 || day > daysIn(year, month) {
		return bad("day is out of range for month")
	}
	if hour > 23 || minute > 59 || sec > 59 {
		return bad("hour, minute or second out of range")
	}
	offset := 0
	if m[8] == "" {
		oh, om := atoi(m[10]), atoi(m[11])
		if oh > 23 || om > 59 {
			return bad("offset out of range")
		}
		offset = oh*3600 + om*60
		if m[9] == "-" {
			offset = -offset
		}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC).Add(-time.Duration(offset) * time.Second)
	if t.Before(MinInstant) || t.After(MaxInstant) {
		return bad("out of representable range")
	}
	return t, nil
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// FormatTime renders a virtual instant: UTC, "Z", microseconds only when
// non-zero (2026-01-01T00:00:00Z, 2026-01-01T00:00:00.500000Z).
func FormatTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

// FormatSeconds renders an instant at whole-second precision (get_time).
func FormatSeconds(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// FormatReal renders a real timestamp the way the reference's
// datetime.isoformat() does: "+00:00", microseconds only when non-zero.
func FormatReal(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05+00:00")
	}
	return t.Format("2006-01-02T15:04:05.000000+00:00")
}

// Duration is a span of virtual time in whole microseconds (the precision of
// the reference's timedelta). Its range (±292 000 years) covers every span
// between two representable instants.
type Duration int64

// Microsecond and Second are Duration units.
const (
	Microsecond Duration = 1
	Second      Duration = 1e6
)

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e6 }

// DurationFromSeconds rounds seconds to whole microseconds, half to even (as
// timedelta(seconds=x) does), saturating at the Duration range.
func DurationFromSeconds(s float64) Duration {
	us := math.RoundToEven(s * 1e6)
	switch {
	case math.IsNaN(us):
		return 0
	case us >= math.MaxInt64:
		return math.MaxInt64
	case us <= math.MinInt64:
		return math.MinInt64
	}
	return Duration(us)
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// ParseDuration parses an ISO 8601 duration P[nW][nD][T[nH][nM][n[.n]S]].
// Years and months are refused (not fixed spans), so are an empty "P"/"PT"
// and spans that overflow.
func ParseDuration(text string) (Duration, error) {
	m := isoDuration.FindStringSubmatch(text)
	if m == nil || (m[1] == "" && m[2] == "" && m[3] == "" && m[4] == "" && m[5] == "") {
		return 0, fmt.Errorf("invalid ISO-8601 duration %s: expected e.g. 'PT24H', 'P1DT6H', 'PT30M'", pyQuote(text))
	}
	total := new(big.Int)
	add := func(s string, unit int64) {
		if s == "" {
			return
		}
		n, _ := new(big.Int).SetString(s, 10)
		total.Add(total, n.Mul(n, big.NewInt(unit)))
	}
	add(m[1], 7*86400e6)
	add(m[2], 86400e6)
	add(m[3], 3600e6)
	add(m[4], 60e6)
	if s := m[5]; s != "" {
		whole, frac, _ := strings.Cut(s, ".")
		add(whole, 1e6)
		if frac != "" {
			// Round the fraction to microseconds, half to even.
			r, _ := new(big.Rat).SetString("0." + frac)
			r.Mul(r, big.NewRat(1e6, 1))
			q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
			twice := new(big.Int).Mul(rem, big.NewInt(2))
			if c := twice.Cmp(r.Denom()); c > 0 || (c == 0 && q.Bit(0) == 1) {
				q.Add(q, big.NewInt(1))
			}
			total.Add(total, q)
		}
	}
	if !total.IsInt64() {
		return 0, fmt.Errorf("invalid ISO-8601 duration %s: out of representable range", pyQuote(text))
	}
	return Duration(total.Int64()), nil
}

// Advance returns t + d, saturating at MinInstant and MaxInstant instead of
// overflowing.
func Advance(t time.Time, d Duration) time.Time {
	if d >= 0 {
		if room := MaxInstant.Sub(t); room < time.Duration(math.MaxInt64) && int64(d) > int64(room/time.Microsecond) {
			return MaxInstant
		}
	} else if room := t.Sub(MinInstant); room < time.Duration(math.MaxInt64) && -int64(d) > int64(room/time.Microsecond) {
		return MinInstant
	}
	sec := int64(d) / 1e6
	us := int64(d) % 1e6
	u := time.Unix(t.Unix()+sec, int64(t.Nanosecond())+us*1000).UTC()
	if u.After(MaxInstant) {
		return MaxInstant
	}
	if u.Before(MinInstant) {
		return MinInstant
	}
	return u
}

// Sub returns a − b in microseconds, saturating at the Duration range.
func Sub(a, b time.Time) Duration {
	secs := a.Unix() - b.Unix()
	ns := int64(a.Nanosecond() - b.Nanosecond())
	if secs > math.MaxInt64/1000000-1 {
		return math.MaxInt64
	}
	if secs < math.MinInt64/1000000+1 {
		return math.MinInt64
	}
	return Duration(secs*1e6 + ns/1000)
}

// pyQuote renders s the way Python's repr() does for the messages the
// reference produces: single quotes unless s contains one.
func pyQuote(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
