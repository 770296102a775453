// Package cron parses cron expressions with a seconds field and finds
// their next time, in UTC. It is pure: the caller gives the time.
//
//	second minute hour day-of-month month day-of-week
//	*/15    *      *    *            *     *          every 15 seconds
//	0       30     9    *            *     mon-fri    09:30 on weekdays
//
// Five fields mean seconds 0. Fields take *, numbers, ranges (1-5), steps
// (*/10, 1-30/2), lists (1,15) and names (jan, mon); when both day fields
// are restricted either may match, as in cron. Descriptors: @yearly,
// @monthly, @weekly, @daily, @hourly, and @every <duration> (whole seconds,
// aligned to the Unix epoch).
// Only package runtime imports it (schedules).
package cron
