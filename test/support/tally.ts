/** How often each value came, in the order each first came: `201 x40, 503 x2`. */
export function tally(values: (number | string)[]): string {
  const counts = new Map<number | string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].map(([value, n]) => `${value} x${n}`).join(', ');
}
