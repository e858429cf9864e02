-- The shop's orders: order 2 is paid and waits to be shipped.
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text NOT NULL);
CREATE TABLE orders (
  id serial PRIMARY KEY,
  customer_id int NOT NULL REFERENCES customers(id),
  item text NOT NULL,
  status text NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'paid', 'shipped'))
);
COPY customers (id, name, email) FROM stdin;
1	Alice	alice@example.com
2	Bob	bob@example.com
\.
INSERT INTO orders (customer_id, item, status) VALUES (1, 'teapot', 'shipped'), (2, 'kettle', 'paid');
SELECT setval('customers_id_seq', 2);
