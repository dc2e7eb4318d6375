import { z } from 'zod';

export type FieldType = 'string' | 'number' | 'boolean' | 'array';

export interface FieldSpec {
  name: string;
  type: FieldType;
  required: boolean;
  /** for an array field, the most entries a row may send (its rule's cap) */
  maxEntries?: number;
}

interface JsonSchemaNode {
  type?: string | string[];
  anyOf?: JsonSchemaNode[];
  maxItems?: number;
}

/** The smallest `maxItems` the node or its alternatives declare. */
function maxItemsOf(node: JsonSchemaNode): number | undefined {
  const caps = [node.maxItems, ...(node.anyOf ?? []).map(maxItemsOf)].filter((cap): cap is number => cap !== undefined);
  return caps.length === 0 ? undefined : Math.min(...caps);
}

function typeOf(node: JsonSchemaNode): FieldType {
  const types = new Set<string>();
  const collect = (n: JsonSchemaNode) => {
    if (typeof n.type === 'string') types.add(n.type);
    else if (Array.isArray(n.type)) n.type.forEach((t) => types.add(t));
    n.anyOf?.forEach(collect);
  };
  collect(node);
  types.delete('null');
  if (types.has('array')) return 'array';
  if (types.has('number') || types.has('integer')) return 'number';
  if (types.has('boolean')) return 'boolean';
  return 'string';
}

/**
 * The input fields of a shared row schema and their JSON types, read from the schema itself
 * (its input-side JSON Schema), so the readers of files never keep a second list of fields to
 * drift from the API's.
 */
export function rowFields(schema: z.ZodType): FieldSpec[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, JsonSchemaNode>;
    required?: string[];
  };
  const required = new Set(json.required ?? []);
  return Object.entries(json.properties ?? {}).map(([name, node]) => {
    const maxEntries = maxItemsOf(node);
    return { name, type: typeOf(node), required: required.has(name), ...(maxEntries === undefined ? {} : { maxEntries }) };
  });
}
