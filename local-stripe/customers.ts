import { invalidRequest, noSuch } from './errors';
import { type FormObject } from './form';
import { Account, ApiRequest, Customer, getCustomer, LIST_PARAMS, ListObject, newId, newestFirst, nowSeconds, paginate } from './objects';
import { allowOnly, applyMetadata, getAddress, getEmail, getNullableString, getObject, getString } from './params';
import { alreadyAttached, consumedPaymentMethod, resolvePaymentMethod } from './payment-methods';

// Customers: create, list, retrieve, update, delete.

const CUSTOMER_FIELDS = ['name', 'email', 'description', 'phone', 'address', 'metadata', 'invoice_settings', 'expand'];


function readInvoiceSettings(params: FormObject): { default_payment_method?: string | null; footer?: string | null } {
  const settings = getObject(params, 'invoice_settings');
  if (!settings) return {};
  allowOnly(settings, ['default_payment_method', 'footer'], 'invoice_settings');
  return {
    default_payment_method: getNullableString(
      settings,
      'default_payment_method',
      'invoice_settings[default_payment_method]',
    ),
    footer: getNullableString(settings, 'footer', 'invoice_settings[footer]'),
  };
}

/** invoice_settings[default_payment_method] must name a PaymentMethod attached to this customer. */
function checkDefaultPaymentMethod(account: Account, customerId: string, pmId: string, pendingAttach?: string): void {
  const param = 'invoice_settings[default_payment_method]';
  if (pmId === pendingAttach) return;
  const stored = account.paymentMethods.get(pmId);
  if (!stored) throw noSuch('PaymentMethod', pmId, param);
  if (stored.object.customer !== customerId) {
    throw invalidRequest(
      `The customer does not have a payment method with the ID ${pmId}. The payment method must be attached to the customer.`,
      { code: 'resource_missing', param },
    );
  }
}

export function createCustomer(req: ApiRequest): Customer {
  const { params, account } = req;
  allowOnly(params, [...CUSTOMER_FIELDS, 'payment_method']);
  const id = newId('cus', 14);
  const settings = readInvoiceSettings(params);
  const pmId = getString(params, 'payment_method');
  const pm = pmId ? resolvePaymentMethod(account, pmId, 'payment_method') : undefined;
  if (pm && pm.stored.object.customer) throw alreadyAttached();
  if (pm?.stored.consumed) throw consumedPaymentMethod(pm.stored.object.id);
  // A magic id (pm_card_visa) attaches as a fresh copy, so the default may name either.
  const attachedId = pm?.stored.object.id;
  let defaultPm = settings.default_payment_method ?? null;
  if (defaultPm && pmId && defaultPm === pmId) defaultPm = attachedId ?? defaultPm;
  if (defaultPm) checkDefaultPaymentMethod(account, id, defaultPm, attachedId);

  const customer: Customer = {
    id,
    object: 'customer',
    address: getAddress(params, 'address') ?? null,
    balance: 0,
    created: nowSeconds(),
    currency: null,
    default_source: null,
    delinquent: false,
    description: getNullableString(params, 'description') ?? null,
    discount: null,
    email: getEmail(params) ?? null,
    invoice_prefix: id.slice(4, 12).toUpperCase(),
    invoice_settings: {
      custom_fields: null,
      default_payment_method: defaultPm,
      footer: settings.footer ?? null,
      rendering_options: null,
    },
    livemode: false,
    metadata: applyMetadata({}, params),
    name: getNullableString(params, 'name', 'name', 256) ?? null,
    next_invoice_sequence: 1,
    phone: getNullableString(params, 'phone', 'phone', 20) ?? null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
  };
  account.customers.set(id, customer);
  if (pm) {
    pm.commit();
    pm.stored.object.customer = id;
  }
  return customer;
}

/** Deletes a customer: later calls naming it answer "No such customer". */
export function deleteCustomer(req: ApiRequest, id: string): { id: string; object: 'customer'; deleted: true } {
  allowOnly(req.params, []);
  getCustomer(req.account, id);
  req.account.customers.delete(id);
  return { id, object: 'customer', deleted: true };
}

export function updateCustomer(req: ApiRequest, id: string): Customer {
  const { params, account } = req;
  const customer = getCustomer(account, id);
  allowOnly(params, CUSTOMER_FIELDS);
  const settings = readInvoiceSettings(params);
  if (settings.default_payment_method) checkDefaultPaymentMethod(account, id, settings.default_payment_method);
  // Read (and so validate) everything before changing anything.
  const name = getNullableString(params, 'name', 'name', 256);
  const email = getEmail(params);
  const description = getNullableString(params, 'description');
  const phone = getNullableString(params, 'phone', 'phone', 20);
  const address = getAddress(params, 'address');
  const metadata = applyMetadata(customer.metadata, params);

  if (name !== undefined) customer.name = name;
  if (email !== undefined) customer.email = email;
  if (description !== undefined) customer.description = description;
  if (phone !== undefined) customer.phone = phone;
  if (address !== undefined) customer.address = address;
  if (settings.default_payment_method !== undefined) {
    customer.invoice_settings.default_payment_method = settings.default_payment_method;
  }
  if (settings.footer !== undefined) customer.invoice_settings.footer = settings.footer;
  customer.metadata = metadata;
  return customer;
}

export function listCustomers(req: ApiRequest): ListObject<Customer> {
  const { params, account } = req;
  allowOnly(params, [...LIST_PARAMS, 'email']);
  const email = getString(params, 'email');
  let items = newestFirst(account.customers);
  if (email !== undefined) items = items.filter((c) => c.email === email);
  return paginate(items, params, '/v1/customers');
}
