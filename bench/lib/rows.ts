/** Realistic rows: ~500-character descriptions, 3 photos, 4 tags (issue 4). */

const WORDS = ['articulated', 'dragon', 'silk', 'matte', 'layer', 'nozzle', 'bed', 'print', 'detail', 'finish', 'resin', 'supports', 'sanded', 'primed', 'painted', 'gift'];

function text(length: number, seed: number): string {
  let out = '';
  let i = seed;
  while (out.length < length) {
    out += `${WORDS[i % WORDS.length]} `;
    i = (i * 7 + 3) % 1009;
  }
  return out.slice(0, length).trim();
}

export function listingRows(count: number, seed = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    title: `Benchmark listing ${seed}-${i} ${text(40, i)}`,
    description: text(500, seed + i),
    price_cents: 500 + ((seed + i) % 10_000),
    currency: 'USD',
    category: 'miniatures',
    material: 'PLA',
    photo_urls: [1, 2, 3].map((n) => `https://cdn.example.com/listings/${seed}-${i}-${n}.jpg`),
    color: 'red',
    tags: ['dragon', 'flexi', 'gift', `batch-${seed % 100}`],
    print_time_hours: 3.5,
    is_available: true,
  }));
}

export function machineRows(count: number, seed = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    template_id: `tpl-${(seed + i) % 50}`,
    category: 'fdm',
    manufacturer: 'Prusa Research',
    model: 'MK4',
    model_number: `MK4-${seed}-${i}`,
    nickname: `Bench ${i}`,
    capabilities: ['pla', 'petg', 'asa'],
    is_skill_station: i % 10 === 0,
  }));
}
